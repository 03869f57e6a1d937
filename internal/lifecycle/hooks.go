package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	releasev1 "helm.sh/helm/v4/pkg/release/v1"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/sequence"
)

// recordedHook is a hook of a release with the record Helm keeps of its last run.
type recordedHook struct {
	resource.Hook
	record *release.Hook
}

// hooksOf parses the hooks recorded in a release.
func hooksOf(rel *release.Release) ([]recordedHook, []resource.Hook, error) {
	var out []recordedHook
	var plain []resource.Hook
	for _, rh := range rel.Hooks {
		objs, err := resource.ParseManifest(rh.Manifest)
		if err != nil {
			return nil, nil, fmt.Errorf("release %s: hook %s: %w", rel.Name, rh.Path, err)
		}
		for _, obj := range objs {
			h, ok, err := resource.ParseHook(obj)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				out = append(out, recordedHook{Hook: h, record: rh})
				plain = append(plain, h)
			}
		}
	}
	return out, plain, nil
}

// hookRunOptions change which hooks of an event run and what is kept of them.
type hookRunOptions struct {
	skip bool
	// include selects hooks (helm test --filter); nil runs every hook of the event.
	include func(resource.Hook) bool
	// logs keeps the logs of every hook's Pods.
	logs bool
	// resume follows the run an interrupted operation left of each hook without
	// before-hook-creation, instead of creating another.
	resume bool
	// succeeded, when set, is called once every hook succeeded, before any is deleted
	// (hook-succeeded).
	succeeded func(context.Context) error
}

// HookLogs are the logs of one hook's Pods, by "pod/container" (or why there are none).
type HookLogs struct {
	Hook resource.Identity
	Logs map[string]string
}

// ranHook is a hook that ran to success.
type ranHook struct {
	recordedHook
	id  resource.Identity
	uid types.UID
	// skipped: the hook could not be created because its namespace is being deleted, and the
	// operation goes on without it (UninstallOptions.SkipHooksInTerminatingNamespace).
	skipped bool
}

// runEventHooks runs the release's hooks for event one after another, in Helm's order, each to
// an observed outcome; it stops at the first that fails. Each hook's last run is recorded in rel.
// It returns the logs it was asked to keep.
func (o *operation) runEventHooks(ctx context.Context, rel *release.Release, event resource.HookEvent, opts hookRunOptions) ([]HookLogs, error) {
	if opts.skip {
		return nil, nil
	}
	hooks, plain, err := hooksOf(rel)
	if err != nil {
		return nil, err
	}
	// One object may be several hooks (one per event, from different templates): each is known
	// by its parsed object.
	byObject := map[*unstructured.Unstructured]recordedHook{}
	for _, h := range hooks {
		byObject[h.Object] = h
	}
	var logs []HookLogs
	var ran []ranHook
	for _, h := range resource.HooksFor(plain, event) {
		if opts.include != nil && !opts.include(h) {
			continue
		}
		done, report, err := o.runHook(ctx, rel.Namespace, byObject[h.Object], event, opts.logs, opts.resume)
		if opts.logs && report != nil {
			logs = append(logs, HookLogs{Hook: done.id, Logs: report.Logs})
		}
		if err != nil {
			// As in Helm, the hooks that succeeded before are still deleted per hook-succeeded.
			return logs, errors.Join(err, o.deleteSucceeded(ctx, event, ran))
		}
		if !done.skipped {
			ran = append(ran, done)
		}
	}
	if opts.succeeded != nil {
		if err := opts.succeeded(ctx); err != nil {
			return logs, err
		}
	}
	// As in Helm, hooks that succeeded are deleted (hook-succeeded) only once every hook of the
	// event succeeded, last first: a later hook may need an earlier one (a Job its ServiceAccount).
	return logs, o.deleteSucceeded(ctx, event, ran)
}

// deleteSucceeded deletes, last first, the hooks with the hook-succeeded policy, then waits until
// they are all gone. Every hook of the event has finished, so none needs another any more.
func (o *operation) deleteSucceeded(ctx context.Context, event resource.HookEvent, ran []ranHook) error {
	gone := map[resource.Identity]types.UID{}
	for _, h := range slices.Backward(ran) {
		if !deletable(h.Hook, resource.HookSucceeded) {
			continue
		}
		if _, err := o.Cluster.Delete(ctx, h.id, h.uid, cluster.DeleteOptions{Propagation: metav1.DeletePropagationBackground}); err != nil {
			return fmt.Errorf("%s: delete hook %s (hook-succeeded): %w", event, h.id, err)
		}
		gone[h.id] = h.uid
	}
	if err := o.waitHooksGone(ctx, event, gone); err != nil {
		return fmt.Errorf("%s: delete hooks (hook-succeeded): %w", event, err)
	}
	return nil
}

// deletable reports whether a hook is deleted on policy p; as in Helm, a CustomResourceDefinition
// never is (its deletion would take every object of its kind along).
func deletable(h resource.Hook, p resource.DeletePolicy) bool {
	return h.HasDeletePolicy(p) && !h.Identity.IsCRD()
}

// runHook runs one hook to its outcome. It returns the hook as it ran, the report of its run
// (when there is one) and a *HookError when it did not succeed. With resume, a hook without
// before-hook-creation whose object exists is not run again: that run is followed.
func (o *operation) runHook(ctx context.Context, namespace string, h recordedHook, event resource.HookEvent, logs, resume bool) (ranHook, *cluster.HookReport, error) {
	obj := h.Object.DeepCopy()
	if err := o.Cluster.Normalize(obj, namespace); err != nil {
		return ranHook{}, nil, fmt.Errorf("%s hook %s: %w", event, h.Identity, err)
	}
	id := resource.IdentityOf(obj)
	done := ranHook{recordedHook: h, id: id}
	emit := o.emitter()
	if deletable(h.Hook, resource.BeforeHookCreation) {
		if err := o.removeHook(ctx, event, id, ""); err != nil {
			return done, nil, fmt.Errorf("%s hook %s: delete the previous run (before-hook-creation): %w", event, id, err)
		}
	}
	start := o.now()
	h.record.LastRun = releasev1.HookExecution{StartedAt: start, Phase: releasev1.HookPhaseRunning}
	emit(engine.Event{Type: engine.HookStarted, Step: string(event), Object: id})
	var logLine func(cluster.LogLine)
	if o.FollowHookLogs && o.Events != nil {
		logLine = func(l cluster.LogLine) {
			emit(engine.Event{Type: engine.HookLogLine, Step: string(event), Object: id, Source: l.Pod + "/" + l.Container, Message: l.Line})
		}
	}
	sequence.Strip(obj) // HIP-0025 does not order hooks; the API server refuses the key
	run, err := o.Cluster.RunHook(ctx, obj, cluster.HookOptions{
		LogLine: logLine,
		Progress: func(id resource.Identity, r readiness.Result) {
			emit(engine.Event{Type: engine.ObjectProgress, Step: string(event), Object: id, State: r.State, Message: r.Message})
		},
		PodFailed: func(p cluster.PodFailure) {
			emit(engine.Event{Type: engine.HookPodFailed, Step: string(event), Object: id, Message: p.String()})
		},
		Logs:   logs || slices.Contains(h.OutputLogPolicies, resource.OutputOnSucceeded),
		Resume: resume && !h.HasDeletePolicy(resource.BeforeHookCreation),
		// A hook that did not finish by the deadline is reported within the operation's grace.
		Afterwards: o.graceContext,
	})
	h.record.LastRun.CompletedAt = o.now()
	took := h.record.LastRun.CompletedAt.Sub(start)
	if run.Created != nil {
		done.uid = run.Created.GetUID()
	}
	herr := &HookError{Event: event, Hook: id, Cause: err}
	if run.Report != nil {
		herr.HookReport = *run.Report
	}
	switch {
	case run.Created == nil && o.terminating != nil && NamespaceTerminating(err):
		// Nothing can be created in a namespace being deleted: the hook is reported, not run.
		h.record.LastRun.Phase = releasev1.HookPhaseUnknown
		o.terminating.skip(SkippedHook{Event: event, Hook: id, Reason: err.Error()})
		done.skipped = true
		return done, nil, nil
	case run.Created == nil:
		h.record.LastRun.Phase = releasev1.HookPhaseFailed
		herr.Outcome = fmt.Sprintf("could not be created: %v", err)
	case err != nil:
		// The outcome was not observed: the deadline came first.
		h.record.LastRun.Phase = releasev1.HookPhaseUnknown
		herr.Outcome = fmt.Sprintf("did not finish: %v", err)
	case run.Result.State == readiness.Failed:
		h.record.LastRun.Phase = releasev1.HookPhaseFailed
		herr.Outcome = "failed: " + run.Result.Message
		if run.Gone {
			herr.Outcome = "was " + run.Result.Message
		}
	default:
		h.record.LastRun.Phase = releasev1.HookPhaseSucceeded
		emit(engine.Event{Type: engine.HookDone, Step: string(event), Object: id, Message: run.Result.Message, Duration: took})
		if run.Report != nil && slices.Contains(h.OutputLogPolicies, resource.OutputOnSucceeded) {
			emit(engine.Event{Type: engine.HookLogs, Step: string(event), Object: id, Message: renderLogs(run.Report.Logs, "")})
		}
		return done, run.Report, nil
	}
	emit(engine.Event{Type: engine.HookFailed, Step: string(event), Object: id, Message: herr.Outcome, Duration: took})
	if run.Created != nil && deletable(h.Hook, resource.HookFailed) {
		if derr := o.removeHook(ctx, event, id, done.uid); derr != nil {
			return done, run.Report, errors.Join(herr, fmt.Errorf("%s hook %s: delete (hook-failed): %w", event, id, derr))
		}
	}
	return done, run.Report, herr
}

// removeHook deletes a hook object (the one with uid, or whatever has its name when uid is empty)
// and waits until it is gone, so that the next run can be created under the same name. An object
// that is already being deleted (a finalizer holds it) is waited for all the same.
func (o *operation) removeHook(ctx context.Context, event resource.HookEvent, id resource.Identity, uid types.UID) error {
	if uid == "" {
		live, err := o.Cluster.Get(ctx, id)
		if err != nil || live == nil {
			return err
		}
		uid = live.GetUID()
	}
	if _, err := o.Cluster.Delete(ctx, id, uid, cluster.DeleteOptions{Propagation: metav1.DeletePropagationBackground}); err != nil {
		return fmt.Errorf("hook %s: %w", id, err)
	}
	return o.waitHooksGone(ctx, event, map[resource.Identity]types.UID{id: uid})
}

// waitHooksGone waits until the hook objects, by UID, are gone.
func (o *operation) waitHooksGone(ctx context.Context, event resource.HookEvent, targets map[resource.Identity]types.UID) error {
	if len(targets) == 0 {
		return nil
	}
	emit := o.emitter()
	return o.Cluster.WaitAbsent(ctx, targets, func(id resource.Identity, r readiness.Result) {
		emit(engine.Event{Type: engine.ObjectProgress, Step: string(event), Object: id, State: r.State, Message: r.Message})
	})
}

// emitter tells of the operations' progress: Events, or nothing when it is nil.
func (d Deps) emitter() func(engine.Event) {
	if d.Events == nil {
		return func(engine.Event) {}
	}
	return d.Events
}
