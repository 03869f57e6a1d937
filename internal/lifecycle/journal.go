package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// journals is what the operation reads the release's journal through: itself, which notes the
// version it read; nil when it keeps no journal.
func (d *operation) journals() JournalReader {
	if d == nil || d.jstore == nil {
		return nil
	}
	return d
}

// Get reads the journal of release name for the operation (JournalReader), and notes its version:
// the operation's journal writes are conditional on it.
func (d *operation) Get(ctx context.Context, name string) (*release.Journal, error) {
	j, version, err := d.jstore.Read(ctx, name)
	if err == nil {
		d.version = version
	}
	return j, err
}

// begin starts the journal of an operation on revision rev with its plan, and returns the plan
// to execute: the journaled one when this operation finishes an interrupted one (the same
// operation on the same revision), from its first unfinished step. An operation begun while
// another ends (an undo on failure) replaces its journal.
func (d *operation) begin(ctx context.Context, op release.Operation, rev int, pl *plan.Plan, opts release.JournalOptions) (*plan.Plan, error) {
	if d == nil {
		return pl, nil
	}
	now := d.now()
	d.j = &release.Journal{Release: d.name, Operation: op, Revision: rev, State: release.JournalRunning,
		Holder: d.Holder.String(), Started: now, Options: opts, Plan: pl}
	d.windowResumed = false
	if r := d.resume; r != nil && r.Operation == op && r.Revision == rev {
		if r.Plan != nil {
			d.j.Plan, pl = r.Plan, r.Plan
		}
		d.j.Steps = append(d.j.Steps, r.Steps...)
		d.j.Hooks = append(d.j.Hooks, r.Hooks...)
		d.j.HooksSucceeded = append(d.j.HooksSucceeded, r.HooksSucceeded...)
		d.j.Started = r.Started
		d.j.WatchStarted = r.WatchStarted
		d.windowResumed = !r.WatchStarted.IsZero()
	}
	d.resume = nil
	if len(d.j.Steps) == 0 && len(pl.Steps) > 0 && pl.Steps[0].Action == plan.Record {
		// The plan records its revision first: the journal is written once that is done, so
		// that a journal always has a record to go with (a revision recorded pending without a
		// journal is finished from its record).
		return pl, nil
	}
	return pl, d.write(ctx)
}

// write records the journal, on the precondition that it is as the operation last read or wrote
// it; after a failure, once the lease is confirmed.
func (d *operation) write(ctx context.Context) error {
	if d.jstore == nil || d.j == nil {
		return nil
	}
	wctx, cancel := d.writeContext(ctx)
	defer cancel()
	if err := d.guardAfterFailure(wctx); err != nil {
		return err
	}
	d.j.Updated = d.now()
	version, err := d.jstore.Put(wctx, d.j, d.version)
	if err != nil {
		if d.terminating != nil && NamespaceTerminating(err) {
			// Said, not hidden: a crash from here on is finished from the record alone.
			d.jstore = nil
			d.terminating.dropJournal()
			d.emitter()(engine.Event{Type: engine.StepStarted, Step: "journal", Message: fmt.Sprintf(
				"release %s: its namespace is being deleted and refuses the journal; the %s goes on without one", d.name, d.operation())})
			return nil
		}
		return d.lose(err)
	}
	d.version = version
	d.count()
	return nil
}

// count tells of one more journal write.
func (d *operation) count() {
	d.writes++
	if d.JournalWritten != nil {
		d.JournalWritten(d.writes)
	}
}

// Done reports whether the journal records step id as completed (engine.Journal).
func (d *operation) Done(id string) bool {
	if d == nil || d.j == nil {
		return false
	}
	if d.j.StepDone(id) {
		return true
	}
	event, ok := strings.CutPrefix(id, "hooks/")
	return ok && d.j.HookDone(event) // recorded by event in older journals
}

// Checkpoint is a safe point between steps (engine.Journal).
func (d *operation) Checkpoint() error { return d.checkpoint() }

// Completed records step i of p as completed (engine.Journal). An object step (apply, wait-ready,
// delete, wait-absent) is not written: redoing it after a crash changes nothing, as an apply of
// the same object is idempotent, a delete is by UID and finds the object already gone, and a wait
// that is over ends at once. It is noted with the next step that is written, or, when the watch
// window follows it, written at once, to say when the window started. A watch step is not
// written: a run that finishes it after its window passed judges the revision once from what it
// sees, which is what the window's end did. Every other step is written at once, and the plan's
// last one not at all: the operation ends with it, and its journal is deleted.
func (d *operation) Completed(ctx context.Context, p *plan.Plan, i int) error {
	if d == nil || d.j == nil {
		return nil
	}
	step := p.Steps[i]
	d.j.Steps = append(d.j.Steps, step.ID)
	if i == len(p.Steps)-1 || step.Action == plan.Watch {
		return nil
	}
	next := p.Steps[i+1]
	if next.Action == plan.Watch && d.j.WatchStarted.IsZero() {
		// The watch window starts now: this write says when, for a run that finishes it.
		d.j.WatchStarted = d.now()
		return d.write(ctx)
	}
	if objectStep(step) {
		return nil
	}
	return d.write(ctx)
}

// watchStarted is when the operation's watch window started, as its journal says; zero when it
// does not say (no journal, or one written before the window started). resumed says an earlier,
// interrupted run started it.
func (d *operation) watchStarted() (started time.Time, resumed bool) {
	if d == nil || d.j == nil {
		return time.Time{}, false
	}
	return d.j.WatchStarted, d.windowResumed
}

func objectStep(s plan.Step) bool {
	switch s.Action {
	case plan.Apply, plan.WaitReady, plan.Delete, plan.WaitAbsent:
		return true
	}
	return false
}

// hookSucceeded reports whether the journal notes the hooks of event as succeeded.
func (d *operation) hookSucceeded(event resource.HookEvent) bool {
	return d != nil && d.j != nil && d.j.HookSucceeded(string(event))
}

// recordHookSucceeded notes that the hooks of event all succeeded, before they are deleted.
func (d *operation) recordHookSucceeded(ctx context.Context, event resource.HookEvent) error {
	if d == nil || d.j == nil {
		return nil
	}
	d.j.HooksSucceeded = append(d.j.HooksSucceeded, string(event))
	return d.write(ctx)
}

// options are the options of the operation's journal; none before begin.
func (d *operation) options() release.JournalOptions {
	if d == nil || d.j == nil {
		return release.JournalOptions{}
	}
	return d.j.Options
}

// takeOver readies the operation to finish the interrupted operation whose journal is j (nil: one
// that left none): the steps and hooks j records as done are skipped, and hook objects the
// interrupted run left are removed before their event runs again.
func (s *session) takeOver(j *release.Journal) {
	s.resume, s.recovering = j, true
}

// end deletes the journal of an operation that ended (succeeded or failed: the release's record
// then says what it is) and readies the operation for the next one. With force, the journal is
// deleted even when this operation did not write it (it finished or undid an interrupted one).
// The deletion is conditional on the journal's version as the operation last read or wrote it,
// and made once the lease is confirmed: a journal another operation wrote is left to it.
func (d *operation) end(ctx context.Context, force bool) error {
	if d == nil {
		return nil
	}
	begun := d.j != nil || d.resume != nil || force
	d.j, d.resume, d.recovering = nil, nil, false
	if d.jstore == nil || !begun || d.version == "" {
		return nil
	}
	wctx, cancel := d.writeContext(ctx)
	defer cancel()
	if err := d.guard(wctx); err != nil {
		return err
	}
	if err := d.jstore.Delete(wctx, d.name, d.version); err != nil {
		return d.lose(err)
	}
	d.version = ""
	d.count()
	return nil
}

// interrupt marks the journal of an operation stopped by a signal as interrupted, once the lease
// is confirmed.
func (d *operation) interrupt(ctx context.Context) error {
	if d == nil || d.j == nil {
		return nil
	}
	d.failing()
	d.j.State = release.JournalInterrupted
	return d.write(ctx)
}

// hooks runs the hooks of event (see runHooks), and notes in the journal when they all succeeded,
// before they are deleted per hook-succeeded. When an interrupted operation is being finished,
// hooks the journal notes as succeeded are not run again: only their deletion is finished. Other
// hook objects its run left are removed first, except those of hooks without
// before-hook-creation: their policy forbids another run while one may exist, so the run left is
// followed to its outcome instead.
func (d *operation) hooks(ctx context.Context, rel *release.Release, event resource.HookEvent) error {
	if d.hookSucceeded(event) {
		return d.removeSucceededHooks(ctx, rel, event)
	}
	recovering := d.recovering
	if recovering {
		if err := d.removeLeftoverHooks(ctx, rel, event, false); err != nil {
			return err
		}
	}
	_, err := d.runEventHooks(ctx, rel, event, hookRunOptions{resume: recovering, succeeded: func(ctx context.Context) error {
		return d.recordHookSucceeded(ctx, event)
	}})
	return err
}

// removeSucceededHooks deletes the hook objects of event with the hook-succeeded policy that
// exist: the hooks succeeded, and the run that ran them was interrupted before it deleted them.
func (d *operation) removeSucceededHooks(ctx context.Context, rel *release.Release, event resource.HookEvent) error {
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
func (d *operation) removeLeftoverHooks(ctx context.Context, rel *release.Release, event resource.HookEvent, all bool) error {
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
	return release.JournalOptions{NoHooks: noHooks, Wait: w.Wait, WaitForJobs: w.WaitForJobs, TakeOwnership: takeOwnership,
		Ordered: w.Ordered || w.OrderIfDeclared}
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
