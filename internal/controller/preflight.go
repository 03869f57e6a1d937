package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/release"
)

const (
	// ReasonPreflightBlocked: the preflight of an install, upgrade or uninstall found what
	// would block it (an admission webhook that cannot answer, an APIService that is not
	// Available, the namespace of an install or upgrade Terminating) and stopped it before it changed anything.
	ReasonPreflightBlocked = "PreflightBlocked"
	// ReasonPreflightWarning (an Event): the preflight found what may get in the operation's
	// way without blocking it (a webhook that may be called, a slow one), or could not read.
	ReasonPreflightWarning = "PreflightWarning"
	// ReasonPreflightIncomplete (an Event): the preflight left out what the Release's account
	// may not read (webhook configurations, APIServices, namespaces).
	ReasonPreflightIncomplete = "PreflightIncomplete"
)

// preflightFor is the preflight of the operations on rel's release, as the CLI runs it: berth
// doctor's checks of the requests the operation's plan will make, read through clients (as the
// Release's account, never as the controller) with store, the operation's. What the account may
// not read is left out, and said in a Normal Event; what may get in the way, in a Warning Event;
// what blocks stops the operation with a *PreflightBlockedError. It reads nothing when the
// controller's view of its own cluster shows nothing the preflight could find. nil when
// spec.skipPreflight.
func (r *Reconciler) preflightFor(rel *v1alpha1.Release, clients *kube.Clients, store release.Store) func(context.Context, release.Operation, string, []doctor.Request) error {
	if rel.Spec.SkipPreflight {
		return nil
	}
	c := doctor.ClusterOf(clients, store)
	view := r.View
	if rel.Spec.KubeConfig != nil {
		view = nil // the view is of the controller's own cluster
	}
	return func(ctx context.Context, op release.Operation, name string, reqs []doctor.Request) error {
		if view != nil && view.clear(ctx, c.Mapper, op, clients.Namespace, reqs) {
			return nil
		}
		findings, err := doctor.Preflight(ctx, c, op, clients.Namespace, name, reqs)
		r.reportPreflight(rel, op, findings)
		if err != nil {
			return &PreflightBlockedError{PreflightError: err}
		}
		return nil
	}
}

// reportPreflight writes the preflight's findings that do not block as Events on rel: what the
// account may not read in one Normal Event, the rest in one Warning Event.
func (r *Reconciler) reportPreflight(rel *v1alpha1.Release, op release.Operation, findings []doctor.Finding) {
	var unread, warnings []string
	for _, f := range findings {
		if f.Check == "permission" {
			unread = append(unread, unreadKind(f.Object.Kind, f.Object.Group, f.Object.Namespace))
			continue
		}
		warnings = append(warnings, fmt.Sprintf("%s: %s; %s; fix: %s", f.Object, f.Problem, f.Breaks, f.Fix))
	}
	if len(unread) > 0 {
		r.Recorder.Eventf(rel, nil, corev1.EventTypeNormal, ReasonPreflightIncomplete, string(op),
			"the preflight of the %s left out what the Release's account may not read: %s; grant it get and list on them for the preflight to check them",
			op, strings.Join(unread, ", "))
	}
	if len(warnings) > 0 {
		r.Recorder.Eventf(rel, nil, corev1.EventTypeWarning, ReasonPreflightWarning, string(op),
			"the preflight of the %s found: %s", op, strings.Join(warnings, "; "))
	}
}

// unreadKind names a kind the preflight could not read, and where.
func unreadKind(kind, group, namespace string) string {
	s := kind
	if group != "" {
		s += "." + group
	}
	if s == "" {
		s = "discovery"
	}
	if namespace != "" {
		s += " in namespace " + namespace
	}
	return s
}

// PreflightBlockedError is an operation the preflight stopped before it changed anything, with
// what blocks it.
type PreflightBlockedError struct{ *doctor.PreflightError }

func (e *PreflightBlockedError) Unwrap() error { return e.PreflightError }

func (e *PreflightBlockedError) conditionReason() string { return ReasonPreflightBlocked }

// Error is one line, for the Ready condition: the first blocker, what it breaks and what to do;
// status.blockers lists every blocker.
func (e *PreflightBlockedError) Error() string {
	p := e.PreflightError
	var b strings.Builder
	fmt.Fprintf(&b, "%s of release %s in namespace %s would be blocked; nothing was changed", p.Operation, p.Release, p.Namespace)
	if len(p.Findings) > 0 {
		f := p.Findings[0]
		fmt.Fprintf(&b, ": %s: %s; %s; fix: %s", f.Object, f.Problem, f.Breaks, f.Fix)
	}
	if more := len(p.Findings) - 1; more > 0 {
		fmt.Fprintf(&b, " (and %d more blocker(s): see status.blockers)", more)
	}
	b.WriteString("; " + e.next())
	return b.String()
}

// next says what to do once what blocks is fixed.
func (e *PreflightBlockedError) next() string {
	if e.Operation == release.OpUninstall {
		return "the uninstall is tried again by itself; set spec.skipPreflight to go on without the preflight"
	}
	return "then change the Release (or let spec.install/upgrade.retries try it again), or set spec.skipPreflight to go on without the preflight"
}

// blockers are the preflight's blockers, for status.blockers.
func (e *PreflightBlockedError) blockers() []v1alpha1.Blocker {
	out := make([]v1alpha1.Blocker, 0, len(e.Findings))
	for _, f := range e.Findings {
		out = append(out, v1alpha1.Blocker{
			Kind: f.Check, Object: f.Object.String(), Message: f.Problem + "; " + f.Breaks, Next: f.Fix + "; " + e.next(),
		})
	}
	return out
}
