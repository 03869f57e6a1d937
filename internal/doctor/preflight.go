package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// Preflight runs the checks that can block operation op on release name in namespace before it
// changes anything, against the requests the operation will make (its plan's objects and hooks;
// the Pods and other objects their controllers make are added here): admission webhooks the API
// server would call for one of them and that cannot answer, APIServices that are not Available
// and serve what the operation touches, and the namespace itself Terminating (but for an
// uninstall, which that deletion asks for, and which goes on without the hooks it can no longer
// create). It returns the
// warnings found (a webhook that may apply, an APIService whose discovery fails) and, when there
// are blockers, an error that names them. CRDs' conversion webhooks are left to berth doctor:
// reading every CRD on every operation costs more than it finds.
func Preflight(ctx context.Context, c Cluster, op release.Operation, namespace, name string, reqs []Request) ([]Finding, *PreflightError) {
	r := &run{Cluster: c, opts: Options{Namespace: namespace, Release: name, planned: true, requests: WithControllers(reqs)}}
	r.Now = c.Now
	if r.Now == nil {
		r.Now = time.Now
	}
	// What the checks read is read at once: the preflight is on every operation's way. Reads
	// started ahead of it for the same operation are waited for instead.
	if a := c.Ahead; a != nil && a.op == op && a.namespace == namespace {
		r.take(a.wait())
	} else {
		r.prefetch(ctx, preflightLists, preflightNamespaces(op, namespace)...)
	}
	r.webhooks(ctx)
	r.apiServices(ctx)
	if op != release.OpUninstall {
		r.namespaces(ctx)
	}
	rep := Report{Scope: r.opts.scope(), Findings: r.findings}
	rep.sort()
	i := slices.IndexFunc(rep.Findings, func(f Finding) bool { return f.Severity != Blocker })
	if i < 0 {
		i = len(rep.Findings)
	}
	blockers, warnings := rep.Findings[:i], rep.Findings[i:]
	if len(blockers) == 0 {
		return warnings, nil
	}
	return warnings, &PreflightError{Operation: op, Release: name, Namespace: namespace, Findings: blockers}
}

// preflightLists are the lists of every namespace a preflight reads.
var preflightLists = []schema.GroupVersionResource{validatingGVR, mutatingGVR, apiServiceGVR}

// preflightNamespaces are the namespaces a preflight of op in namespace reads: the namespace,
// but for an uninstall's.
func preflightNamespaces(op release.Operation, namespace string) []string {
	if op == release.OpUninstall || namespace == "" {
		return nil
	}
	return []string{namespace}
}

// Ahead are the reads of a preflight, started before it (ReadAhead): an operation starts them
// as it surveys the cluster, so that its preflight, which needs the operation's plan, waits for
// no round trip of its own.
type Ahead struct {
	op        release.Operation
	namespace string
	done      chan struct{}
	got       reads
}

// ReadAhead starts, with ctx, the reads of a Preflight of op in namespace through c, and returns
// them; set as the Cluster's Ahead, that Preflight takes them instead of reading again.
func ReadAhead(ctx context.Context, c Cluster, op release.Operation, namespace string) *Ahead {
	a := &Ahead{op: op, namespace: namespace, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		a.got = readAll(ctx, c.Dynamic, preflightLists, preflightNamespaces(op, namespace))
	}()
	return a
}

// wait returns the reads once they are answered.
func (a *Ahead) wait() reads {
	<-a.done
	return a.got
}

// PreflightError is what stopped an operation before it began: the blockers its preflight found.
type PreflightError struct {
	Operation release.Operation
	Release   string
	Namespace string
	Findings  []Finding
}

func (e *PreflightError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s of release %s in namespace %s would be blocked; nothing was changed:", e.Operation, e.Release, e.Namespace)
	for _, f := range e.Findings {
		fmt.Fprintf(&b, "\n  %s: %s\n    breaks: %s\n    fix: %s", f.Object, f.Problem, f.Breaks, f.Fix)
	}
	return b.String()
}

// releaseRequests are the requests an upgrade or uninstall of the release's newest revision could
// make: each object updated and deleted (with what its controller does then) and each hook run.
// ok is false when the release has no record to read.
func (r *run) releaseRequests(ctx context.Context) ([]Request, bool) {
	rel, err := r.Releases(r.opts.Namespace).Last(ctx, r.opts.Release)
	if err != nil {
		return nil, false
	}
	objs, err := resource.ParseManifest(rel.Manifest)
	if err != nil {
		return nil, false
	}
	var reqs []Request
	for _, obj := range objs {
		r.setNamespace(obj, rel.Namespace)
		reqs = append(reqs,
			Request{Operation: admissionv1.Update, Object: obj, SpecChanged: true},
			Request{Operation: admissionv1.Delete, Object: obj})
	}
	for _, rh := range rel.Hooks {
		objs, err := resource.ParseManifest(rh.Manifest)
		if err != nil {
			continue
		}
		for _, obj := range objs {
			r.setNamespace(obj, rel.Namespace)
			if h, ok, err := resource.ParseHook(obj); ok && err == nil {
				reqs = append(reqs, HookRequests(h)...)
			}
		}
	}
	return WithControllers(reqs), true
}

// setNamespace gives obj namespace when its kind is namespaced and it names none, as the API
// server does.
func (r *run) setNamespace(obj *unstructured.Unstructured, namespace string) {
	if obj.GetNamespace() != "" || r.Mapper == nil {
		return
	}
	gvk := obj.GroupVersionKind()
	if m, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil && m.Scope.Name() == meta.RESTScopeNameNamespace {
		obj.SetNamespace(namespace)
	}
}
