package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// operation is the state of the operation under way: its journal and whether a signal asked it to
// stop. Its methods do nothing on a nil operation (an operation run without operate).
type operation struct {
	name     string
	journals JournalStore
	holder   release.Holder
	now      func() time.Time
	// written is told the count of journal writes; may be nil.
	written func(int)
	writes  int
	// stop ends on a signal.
	stop context.Context

	// j is the journal of the operation being carried out; nil before begin.
	j *release.Journal
	// muted is set for an operation nested in another (an undo): only the outer one is journaled.
	muted bool
	// resume is the journal of the interrupted operation being finished: its completed steps and
	// hooks are skipped. recovering is set while an interrupted operation is finished, journal or
	// not: hook objects left by the interrupted run are removed before their event runs again.
	resume     *release.Journal
	recovering bool
}

// begin starts the journal of an operation on revision rev, with its plan. An operation begun
// inside another is not journaled.
func (o *operation) begin(ctx context.Context, op release.Operation, rev int, pl *plan.Plan, opts release.JournalOptions) error {
	if o == nil {
		return nil
	}
	if o.j != nil {
		o.muted = true
		return nil
	}
	now := o.now()
	o.j = &release.Journal{Release: o.name, Operation: op, Revision: rev, State: release.JournalRunning,
		Holder: o.holder.String(), Started: now, Options: opts, Plan: pl}
	if r := o.resume; r != nil && r.Operation == op && r.Revision == rev {
		o.j.Steps = append(o.j.Steps, r.Steps...)
		o.j.Hooks = append(o.j.Hooks, r.Hooks...)
		o.j.HooksSucceeded = append(o.j.HooksSucceeded, r.HooksSucceeded...)
		o.j.Started = r.Started
	}
	return o.write(ctx)
}

// write records the journal.
func (o *operation) write(ctx context.Context) error {
	if o.journals == nil || o.muted || o.j == nil {
		return nil
	}
	o.j.Updated = o.now()
	if err := o.journals.Put(context.WithoutCancel(ctx), o.j); err != nil {
		return err
	}
	o.writes++
	if o.written != nil {
		o.written(o.writes)
	}
	return nil
}

// stepDone reports whether the journal records step id as completed.
func (o *operation) stepDone(id string) bool { return o != nil && o.j.StepDone(id) }

// hookDone reports whether the journal records the hooks of event as completed.
func (o *operation) hookDone(event resource.HookEvent) bool {
	return o != nil && !o.muted && o.j.HookDone(string(event))
}

// recordStep notes step id as completed; persist writes the journal, which otherwise records it
// with the next write.
func (o *operation) recordStep(ctx context.Context, id string, persist bool) error {
	if o == nil || o.j == nil || o.muted {
		return nil
	}
	o.j.Steps = append(o.j.Steps, id)
	if !persist {
		return nil
	}
	return o.write(ctx)
}

// hookSucceeded reports whether the journal records the hooks of event as succeeded.
func (o *operation) hookSucceeded(event resource.HookEvent) bool {
	return o != nil && !o.muted && o.j.HookSucceeded(string(event))
}

// recordHookSucceeded notes that the hooks of event all succeeded, before they are deleted.
func (o *operation) recordHookSucceeded(ctx context.Context, event resource.HookEvent) error {
	if o == nil || o.j == nil || o.muted {
		return nil
	}
	o.j.HooksSucceeded = append(o.j.HooksSucceeded, string(event))
	return o.write(ctx)
}

func (o *operation) recordHook(ctx context.Context, event resource.HookEvent) error {
	if o == nil || o.j == nil || o.muted {
		return nil
	}
	o.j.Hooks = append(o.j.Hooks, string(event))
	return o.write(ctx)
}

// stopped reports whether a signal asked the operation to stop.
func (o *operation) stopped() bool { return o != nil && o.stop != nil && o.stop.Err() != nil }

// checkpoint is a safe point: it returns ErrInterrupted when a signal asked to stop.
func (o *operation) checkpoint() error {
	if o.stopped() {
		return ErrInterrupted
	}
	return nil
}

// operation names what the journal records (for messages).
func (o *operation) operation() release.Operation {
	if o == nil || o.j == nil {
		return "operation"
	}
	return o.j.Operation
}

// end deletes the journal of an operation that ended (succeeded or failed: the release's record
// then says what it is) and readies the operation for the next one.
// With force, the journal is deleted even when this operation did not write it (it finished or
// undid an interrupted one).
func (o *operation) end(ctx context.Context, force bool) error {
	if o == nil {
		return nil
	}
	begun := o.j != nil || o.resume != nil || force
	o.j, o.resume, o.muted, o.recovering = nil, nil, false, false
	if o.journals == nil || !begun {
		return nil
	}
	if err := o.journals.Delete(ctx, o.name); err != nil {
		return err
	}
	o.writes++
	if o.written != nil {
		o.written(o.writes)
	}
	return nil
}

// interrupt marks the journal of an operation stopped by a signal as interrupted.
func (o *operation) interrupt(ctx context.Context) error {
	if o == nil || o.j == nil {
		return nil
	}
	o.muted = false
	o.j.State = release.JournalInterrupted
	return o.write(ctx)
}

// execute runs the plan's steps one at a time, skipping those the journal of an interrupted
// operation records as completed, recording each completed step, and stopping between steps when
// a signal asks to.
// Objects of kinds the release's CRDs define (late) are validated once those are Established.
func (d Deps) execute(ctx context.Context, pl *plan.Plan, late *lateCheck, opts engine.Options) (*engine.Result, error) {
	res := &engine.Result{Changes: map[resource.Identity]engine.Change{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, step := range pl.Steps {
		if d.op.stepDone(step.ID) {
			continue
		}
		if err := d.op.checkpoint(); err != nil {
			return res, err
		}
		if err := late.before(ctx, step); err != nil {
			return res, &engine.StepError{Step: step.ID, Err: err}
		}
		r, err := engine.Execute(ctx, d.Cluster, &plan.Plan{Steps: []plan.Step{step}, Kept: pl.Kept}, opts)
		if r != nil {
			maps.Copy(res.Changes, r.Changes)
		}
		if err != nil {
			return res, err
		}
		late.after(ctx, step)
		// A run of steps of one action (apply kind after kind, delete kind after kind) is recorded
		// once, after its last step, and the plan's last step with whatever comes next (hooks, the
		// end): redoing a step after a crash changes nothing, as an apply of the same object is
		// idempotent, a delete is by UID and finds the object already gone, and a wait that is
		// over ends at once.
		persist := i < len(pl.Steps)-1 && pl.Steps[i+1].Action != step.Action
		if err := d.op.recordStep(ctx, step.ID, persist); err != nil {
			return res, err
		}
	}
	return res, nil
}

// hooks runs the hooks of event (see runHooks) unless the journal records them as completed, and
// records them when they succeed (before they are deleted per hook-succeeded) and when they
// complete. When an interrupted operation is being finished, hooks the journal records as
// succeeded are not run again: only their deletion is finished. Other hook objects its run left
// are removed first, except those of hooks without before-hook-creation: their policy forbids
// another run while one may exist, so the run left is followed to its outcome instead.
func (d Deps) hooks(ctx context.Context, rel *release.Release, event resource.HookEvent, skip bool) error {
	if skip || d.op.hookDone(event) {
		return nil
	}
	if err := d.op.checkpoint(); err != nil {
		return err
	}
	if d.op.hookSucceeded(event) {
		if err := d.removeSucceededHooks(ctx, rel, event); err != nil {
			return err
		}
		return d.op.recordHook(ctx, event)
	}
	recovering := d.op != nil && d.op.recovering
	if recovering {
		if err := d.removeLeftoverHooks(ctx, rel, event, false); err != nil {
			return err
		}
	}
	_, err := d.runEventHooks(ctx, rel, event, hookRunOptions{resume: recovering, succeeded: func(ctx context.Context) error {
		return d.op.recordHookSucceeded(ctx, event)
	}})
	if err != nil {
		return err
	}
	return d.op.recordHook(ctx, event)
}

// removeSucceededHooks deletes the hook objects of event with the hook-succeeded policy that
// exist: the hooks succeeded, and the run that ran them was interrupted before it deleted them.
func (d Deps) removeSucceededHooks(ctx context.Context, rel *release.Release, event resource.HookEvent) error {
	_, plain, err := hooksOf(rel)
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range slices.Backward(resource.HooksFor(plain, event)) {
		if !deletable(h, resource.HookSucceeded) {
			continue
		}
		obj := h.Object.DeepCopy()
		if err := d.Cluster.Normalize(obj, rel.Namespace); err != nil {
			continue // its kind is gone: nothing of it is left
		}
		if err := d.removeHook(ctx, event, resource.IdentityOf(obj), ""); err != nil {
			errs = append(errs, fmt.Errorf("%s: delete the hooks that succeeded (hook-succeeded): %w", event, err))
		}
	}
	return errors.Join(errs...)
}

// removeLeftoverHooks deletes the hook objects of event that exist: left by a run that was
// interrupted before it could delete them. Unless all is set, the objects of hooks without
// before-hook-creation are kept, to be followed.
func (d Deps) removeLeftoverHooks(ctx context.Context, rel *release.Release, event resource.HookEvent, all bool) error {
	_, plain, err := hooksOf(rel)
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range resource.HooksFor(plain, event) {
		if !all && !h.HasDeletePolicy(resource.BeforeHookCreation) {
			continue
		}
		obj := h.Object.DeepCopy()
		if err := d.Cluster.Normalize(obj, rel.Namespace); err != nil {
			continue // its kind is gone: nothing of it is left
		}
		if err := d.removeHook(ctx, event, resource.IdentityOf(obj), ""); err != nil {
			errs = append(errs, fmt.Errorf("%s: remove the hook left by the interrupted run: %w", event, err))
		}
	}
	return errors.Join(errs...)
}

// journalOptions are the options a resumption needs.
func journalOptions(w WaitOptions, noHooks, takeOwnership bool) release.JournalOptions {
	return release.JournalOptions{NoHooks: noHooks, Wait: w.Wait, WaitForJobs: w.WaitForJobs, TakeOwnership: takeOwnership}
}

// crdObjects parses the CRDs of a recorded revision's chart (its crds/ directories).
func crdObjects(rel *release.Release) ([]*unstructured.Unstructured, error) {
	if rel.Chart == nil {
		return nil, nil
	}
	var out []*unstructured.Unstructured
	for _, crd := range rel.Chart.CRDObjects() {
		objs, err := resource.ParseManifest(string(crd.File.Data))
		if err != nil {
			return nil, fmt.Errorf("release %s revision %d: %s: %w", rel.Name, rel.Version, crd.Filename, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// cascadeOf is the deletion propagation a journal records.
func cascadeOf(s string) metav1.DeletionPropagation { return metav1.DeletionPropagation(s) }
