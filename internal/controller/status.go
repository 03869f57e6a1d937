package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/lifecycle"
)

// Condition types. Ready, Reconciling and Stalled follow kstatus: Reconciling and Stalled are
// present only while true.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
	ConditionReleased    = "Released"
)

// Condition reasons.
const (
	ReasonProgressing      = "Progressing"
	ReasonInstallSucceeded = "InstallSucceeded"
	ReasonUpgradeSucceeded = "UpgradeSucceeded"
	ReasonInstallFailed    = "InstallFailed"
	ReasonUpgradeFailed    = "UpgradeFailed"
	ReasonUninstallFailed  = "UninstallFailed"
	ReasonBlocked          = "Blocked"
	ReasonHookFailed       = "HookFailed"
	ReasonPermissionDenied = "PermissionDenied"
	ReasonChartUnavailable = "ChartUnavailable"
	ReasonLocked           = "Locked"
	ReasonFailed           = "Failed"
	// ReasonRenderBudgetExceeded is a chart whose templates were stopped at a limit of their
	// render's budget (memory, CPU time, output, objects) or at the operation's deadline.
	ReasonRenderBudgetExceeded = "RenderBudgetExceeded"
)

// metricConditions are the conditions berth_releases counts Releases by. A Release without
// Ready counts as Ready Unknown; Reconciling and Stalled are only there while true, so a
// Release without them counts as False.
func metricConditions() []status.Counted {
	return []status.Counted{
		{Type: ConditionReady, Absent: metav1.ConditionUnknown},
		{Type: ConditionReconciling, Absent: metav1.ConditionFalse},
		{Type: ConditionStalled, Absent: metav1.ConditionFalse},
	}
}

// historyMax is how many operations the status keeps.
const historyMax = 5

// logTailLines is how many lines of a failed hook's logs a blocker keeps.
const logTailLines = 20

// setCondition sets a condition of rel for its current generation.
func setCondition(rel *v1alpha1.Release, t string, is metav1.ConditionStatus, reason, msg string) {
	status.PutCondition(&rel.Status.Conditions, metav1.Condition{
		Type: t, Status: is, Reason: reason, Message: msg, ObservedGeneration: rel.Generation,
	})
}

// markReconciling says an operation is under way.
func markReconciling(rel *v1alpha1.Release, msg string) {
	setCondition(rel, ConditionReconciling, metav1.ConditionTrue, ReasonProgressing, msg)
	setCondition(rel, ConditionReady, metav1.ConditionUnknown, ReasonProgressing, msg)
	meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionStalled)
}

// markReady says the release is as the spec asks.
func markReady(rel *v1alpha1.Release, reason, msg string) {
	setCondition(rel, ConditionReady, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionReconciling)
	meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionStalled)
	rel.Status.Blockers = nil
	rel.Status.CurrentStep = ""
	rel.Status.ObservedGeneration = rel.Generation
}

// markWaiting says the Release waits for something outside it (other Releases) before it acts,
// and that the controller goes on by itself once that changes.
func markWaiting(rel *v1alpha1.Release, reason, msg string) {
	setCondition(rel, ConditionReady, metav1.ConditionFalse, reason, msg)
	setCondition(rel, ConditionReconciling, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionStalled)
	rel.Status.Blockers = nil
	rel.Status.CurrentStep = ""
	rel.Status.ObservedGeneration = rel.Generation
}

// markFailed says the release is not as the spec asks, why, and whether the controller will go
// on by itself (stalled: it will not until something changes).
func markFailed(rel *v1alpha1.Release, reason string, err error, stalled bool) {
	msg := errorLine(err)
	setCondition(rel, ConditionReady, metav1.ConditionFalse, reason, msg)
	meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionReconciling)
	if stalled {
		setCondition(rel, ConditionStalled, metav1.ConditionTrue, reason, msg)
	} else {
		meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionStalled)
	}
	rel.Status.Blockers = blockersOf(err, rel)
	rel.Status.CurrentStep = ""
	rel.Status.ObservedGeneration = rel.Generation
}

// addHistory records an operation, newest first.
func addHistory(rel *v1alpha1.Release, r v1alpha1.OperationRecord) {
	h := append([]v1alpha1.OperationRecord{r}, rel.Status.History...)
	if len(h) > historyMax {
		h = h[:historyMax]
	}
	rel.Status.History = h
}

// changeCounts counts what the runs of an operation did to the release's objects.
func changeCounts(runs []lifecycle.Run) *v1alpha1.ChangeCounts {
	var c v1alpha1.ChangeCounts
	for _, run := range runs {
		for _, e := range run.Changes.Entries {
			switch e.Change {
			case engine.Created:
				c.Created++
			case engine.Configured:
				c.Configured++
			case engine.Unchanged:
				c.Unchanged++
			case engine.Deleted, engine.Gone:
				c.Deleted++
			}
		}
	}
	return &c
}

// operationRecord describes an operation that started at start and ended with err.
func operationRecord(op string, start, end time.Time, revision int, chartVersion string, err error) v1alpha1.OperationRecord {
	r := v1alpha1.OperationRecord{
		Operation: op, Outcome: "Succeeded", Revision: revision, ChartVersion: chartVersion,
		StartedAt: metav1.NewTime(start), Duration: metav1.Duration{Duration: end.Sub(start).Round(time.Millisecond)},
	}
	var blocked *engine.BlockedError
	switch {
	case errors.As(err, &blocked):
		r.Outcome, r.Message = "Blocked", errorLine(err)
	case err != nil:
		r.Outcome, r.Message = "Failed", errorLine(err)
	}
	return r
}

// reasonOf is the condition reason of an operation's error.
func reasonOf(err error, failed string) string {
	var blocked *engine.BlockedError
	var hook *lifecycle.HookError
	var spec *SpecError
	var missing *inputs.MissingError
	var reasoned interface{ conditionReason() string }
	switch {
	case errors.As(err, &spec):
		return spec.Reason
	case errors.As(err, &reasoned) && reasoned.conditionReason() != "":
		return reasoned.conditionReason()
	case errors.As(err, &missing) && missing.Reason != "":
		return missing.Reason
	case errors.As(err, new(*inputs.ValuesError)):
		return ReasonInvalidValues
	case errors.As(err, new(*inputs.KubeConfigError)):
		return ReasonInvalidKubeConfig
	case errors.As(err, new(*chart.RenderBudgetError)):
		return ReasonRenderBudgetExceeded
	case errors.As(err, new(*lifecycle.JournalRefusedError)):
		return ReasonJournalRefused
	case errors.As(err, new(*kube.DiscoveryTooLargeError)):
		return ReasonClusterDiscoveryTooLarge
	case errors.As(err, new(*lifecycle.WindowTooLongError)):
		return ReasonWatchWindowTooLong
	case recordTooLarge(err):
		return ReasonRecordTooLarge
	case recordInvalid(err):
		return ReasonInvalidRecord
	case errors.As(err, &blocked):
		return ReasonBlocked
	case errors.As(err, &hook):
		return ReasonHookFailed
	case lifecycle.NamespaceTerminating(err):
		return ReasonNamespaceTerminating
	case impersonationForbidden(err):
		return ReasonImpersonationForbidden
	case admissionDenied(err):
		return ReasonAdmissionDenied
	case isForbidden(err):
		return ReasonPermissionDenied
	default:
		return failed
	}
}

// blockersOf names what stopped an operation, as the CLI names it: what its preflight found
// would block it, the blockers of a blocked deletion, a failed hook with the end of its logs, a template that failed with its message, or
// a missing permission of the Release's account (permissionNext). The logs and the message are
// in logTail, which status.Redact removes unless the controller may show them.
func blockersOf(err error, rel *v1alpha1.Release) []v1alpha1.Blocker {
	var out []v1alpha1.Blocker
	var degraded *DegradedError
	if errors.As(err, &degraded) {
		return []v1alpha1.Blocker{degradedBlocker(degraded.Regression)}
	}
	var preflight *PreflightBlockedError
	if errors.As(err, &preflight) {
		return preflight.blockers()
	}
	var blocked *engine.BlockedError
	if errors.As(err, &blocked) {
		for _, b := range blocked.Blockers {
			out = append(out, v1alpha1.Blocker{Kind: string(b.Kind), Object: b.Object.String(), Message: b.Message, Next: b.Next})
		}
		return out
	}
	var hook *lifecycle.HookError
	if errors.As(err, &hook) {
		return []v1alpha1.Blocker{{
			Kind: "hook", Object: hook.Hook.String(),
			Message: fmt.Sprintf("%s hook %s%s", hook.Event, status.HookOutcome(hook), status.LastPodState(hook.Pods)),
			Next:    "fix the hook or what it depends on, then change the Release (or set install/upgrade.disableHooks, uninstall.disableHooks)",
			LogTail: logTail(hook.Logs),
		}}
	}
	var refused *lifecycle.JournalRefusedError
	if errors.As(err, &refused) {
		return []v1alpha1.Blocker{journalBlocker(refused)}
	}
	var tmpl *chart.TemplateError
	if errors.As(err, &tmpl) {
		return []v1alpha1.Blocker{status.TemplateBlocker(tmpl)}
	}
	var immutable *lifecycle.ImmutableFieldError
	if errors.As(err, &immutable) {
		b := v1alpha1.Blocker{Kind: "immutable", Object: immutable.ID.String(), Message: immutable.Error(),
			Next: "set spec.upgrade.force to replace it (deleted, waited for until gone, and created again: what it holds goes with it), or change the chart or values back"}
		if immutable.ID.IsCRD() {
			b.Next = "change the chart back: a CustomResourceDefinition is never replaced"
		}
		return []v1alpha1.Blocker{b}
	}
	var refusal apierrors.APIStatus
	if errors.As(err, &refusal) && apierrors.IsForbidden(err) && !lifecycle.NamespaceTerminating(err) {
		b := v1alpha1.Blocker{
			Kind:    "permission",
			Message: refusal.Status().Message,
			Next:    permissionNext(rel),
		}
		if d := refusal.Status().Details; d != nil {
			b.Object = strings.Trim(d.Kind+"/"+d.Name, "/")
		}
		if admissionDenied(err) {
			return []v1alpha1.Blocker{admissionBlocker(b.Object, b.Message)}
		}
		if impersonationForbidden(err) {
			b.Next = impersonationNext(rel.Namespace)
		}
		return []v1alpha1.Blocker{b}
	}
	return nil
}

// permissionNext says whom to grant a permission the API server refused an operation of rel.
// A Release released into another cluster acts there as its kubeconfig's identity (or the
// account it impersonates), and here, to read the kubeconfig, the values and the chart, as the
// namespace's default account: the refusal's message names which.
func permissionNext(rel *v1alpha1.Release) string {
	if rel.Spec.KubeConfig == nil {
		return fmt.Sprintf("grant the Release's ServiceAccount in namespace %s this permission (a Role or ClusterRole bound to it), or name another account in spec.serviceAccountName", rel.Namespace)
	}
	there := "the identity of the kubeconfig in Secret " + rel.Spec.KubeConfig.SecretRef.Name
	if rel.Spec.ServiceAccountName != "" {
		there = fmt.Sprintf("ServiceAccount %s/%s, which spec.serviceAccountName impersonates there", rel.Namespace, rel.Spec.ServiceAccountName)
	}
	return fmt.Sprintf("grant this permission to the account the message names: in the Release's cluster (spec.kubeConfig), %s; in this cluster, ServiceAccount %s/default, which reads the kubeconfig, the values and the chart", there, rel.Namespace)
}

func isForbidden(err error) bool {
	var refusal apierrors.APIStatus
	return errors.As(err, &refusal) && apierrors.IsForbidden(err)
}

// logTail returns the last lines of a hook's logs, each container's under its name.
func logTail(logs map[string]string) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(logs)) {
		text := logs[name]
		lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
		if len(lines) > logTailLines {
			lines = lines[len(lines)-logTailLines:]
		}
		fmt.Fprintf(&b, "%s:\n%s\n", name, strings.Join(lines, "\n"))
	}
	return strings.TrimRight(b.String(), "\n")
}

// firstLine is the first line of s, for a condition's message (inputs.FirstLine).
func firstLine(s string) string { return inputs.FirstLine(s) }

// errorLine is the first line of err's message as the controller may write it (status.ErrorLine).
func errorLine(err error) string { return status.ErrorLine(err) }

// event records an Event about rel, its note without the values the reconcile's redactor (ctx)
// knows, then cut to fit (status.CutNotes): the Events of a reconcile go through it.
func (r *Reconciler) event(ctx context.Context, rel *v1alpha1.Release, eventtype, reason, action, note string) {
	r.Recorder.Eventf(rel, nil, eventtype, reason, action, "%s", status.RedactorOf(ctx).Text(note))
}
