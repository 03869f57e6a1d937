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

// operation names what the journal records (for messages).
func (s *session) operation() release.Operation {
	if s.j == nil {
		return "operation"
	}
	return s.j.Operation
}

// journals is what the operation reads the release's journal through: itself, which notes the
// version it read; nil when it keeps no journal.
func (s *session) journals() JournalReader {
	if s.jstore == nil {
		return nil
	}
	return s
}

// Get reads the journal of release name for the operation (JournalReader), and notes its version:
// the operation's journal writes are conditional on it.
func (s *session) Get(ctx context.Context, name string) (*release.Journal, error) {
	j, version, err := s.jstore.Read(ctx, name)
	if err == nil {
		s.version = version
	}
	return j, err
}

// begin starts the journal of an operation on revision rev with its plan, and returns the plan
// to execute: the journaled one when this operation finishes an interrupted one (the same
// operation on the same revision), from its first unfinished step. An operation begun while
// another ends (an undo on failure) replaces its journal.
func (s *session) begin(ctx context.Context, op release.Operation, rev int, pl *plan.Plan, opts release.JournalOptions) (*plan.Plan, error) {
	now := s.clock()
	s.j = &release.Journal{Release: s.name, Operation: op, Revision: rev, State: release.JournalRunning,
		Holder: s.holder.String(), Started: now, Options: opts, Plan: pl}
	s.beside = ""
	s.windowResumed = false
	if r := s.resume; r != nil && r.Operation == op && r.Revision == rev {
		if r.Plan != nil {
			s.j.Plan, pl = r.Plan, r.Plan
		}
		s.j.Steps = append(s.j.Steps, r.Steps...)
		s.j.Hooks = append(s.j.Hooks, r.Hooks...)
		s.j.HooksSucceeded = append(s.j.HooksSucceeded, r.HooksSucceeded...)
		s.j.Started = r.Started
		s.j.WatchStarted = r.WatchStarted
		s.windowResumed = !r.WatchStarted.IsZero()
	}
	s.resume = nil
	if len(s.j.Steps) == 0 && len(pl.Steps) > 0 && pl.Steps[0].Action == plan.Record {
		// The plan records its revision first, and the journal says what is done once that
		// is: a revision recorded pending without a journal is finished from its record.
		if op != release.OpUninstall && !s.failed && s.lost == nil {
			// A new revision's journal goes out beside its record, as if the record were
			// written (journalBeside): recovery finds a journal whose revision has no record
			// stale and deletes it (findInterrupted), so a crash between the two leaves nothing
			// to finish. The record step's completion waits for it (Completed). An uninstall
			// records the revision it has, which a journal would find; an operation that
			// failed writes once its lease is confirmed.
			s.beside = pl.Steps[0].ID
		}
		return pl, nil
	}
	return pl, s.write(ctx)
}

// journalBeside starts writing the journal beside step, the record step that begin left it to:
// the step calls it once it has read what it reads (the records it prunes, listed with the
// journal), just before its record goes out.
func (s *session) journalBeside(ctx context.Context, step string) {
	if s.beside == "" || s.beside != step || s.j == nil {
		return
	}
	s.beside = ""
	s.writeAhead(ctx, step)
}

// journalAhead is a journal write under way beside the step it records as done (writeAhead).
type journalAhead struct {
	step    string
	done    chan struct{}
	version string
	err     error
}

// writeAhead starts writing the journal with step recorded as done, before it is: settle ends
// the write. Until then the session's journal is the operation's alone; the write has a copy.
func (s *session) writeAhead(ctx context.Context, step string) {
	if s.jstore == nil {
		return
	}
	j := *s.j
	j.Steps = append(slices.Clip(s.j.Steps), step)
	j.Updated = s.clock()
	a := &journalAhead{step: step, done: make(chan struct{})}
	wctx, cancel := s.writeContext(ctx)
	store, version := s.jstore, s.version
	go func() {
		defer close(a.done)
		defer cancel()
		a.version, a.err = store.Put(wctx, &j, version)
	}()
	s.ahead = a
}

// settle waits for the journal write started ahead, if one is under way, and takes its outcome
// as write takes its own.
func (s *session) settle() error {
	a := s.ahead
	if a == nil {
		return nil
	}
	s.ahead = nil
	<-a.done
	return s.written(a.version, a.err)
}

// write records the journal, on the precondition that it is as the operation last read or wrote
// it; after a failure, once the lease is confirmed.
func (s *session) write(ctx context.Context) error {
	if err := s.settle(); err != nil {
		return err
	}
	if s.jstore == nil || s.j == nil {
		return nil
	}
	wctx, cancel := s.writeContext(ctx)
	defer cancel()
	if err := s.guardAfterFailure(wctx); err != nil {
		return err
	}
	s.j.Updated = s.clock()
	return s.written(s.jstore.Put(wctx, s.j, s.version))
}

// written takes the outcome of a journal write: the version written, or why there is none.
func (s *session) written(version string, err error) error {
	if err != nil {
		if s.terminating != nil && NamespaceTerminating(err) {
			// Said, not hidden: a crash from here on is finished from the record alone.
			s.jstore = nil
			s.terminating.dropJournal()
			s.emit(engine.Event{Type: engine.StepStarted, Step: "journal", Message: fmt.Sprintf(
				"release %s: its namespace is being deleted and refuses the journal; the %s goes on without one", s.name, s.operation())})
			return nil
		}
		return s.lose(err)
	}
	s.version = version
	s.count()
	return nil
}

// count tells of one more journal write.
func (s *session) count() {
	s.writes++
	if s.journalWritten != nil {
		s.journalWritten(s.writes)
	}
}

// Done reports whether the journal records step id as completed (engine.Journal).
func (s *session) Done(id string) bool {
	if s.j == nil {
		return false
	}
	if s.j.StepDone(id) {
		return true
	}
	event, ok := strings.CutPrefix(id, "hooks/")
	return ok && s.j.HookDone(event) // recorded by event in older journals
}

// Checkpoint is a safe point between steps (engine.Journal).
func (s *session) Checkpoint() error { return s.checkpoint() }

// Completed records step i of p as completed (engine.Journal). An object step (apply, wait-ready,
// delete, wait-absent) is not written: redoing it after a crash changes nothing, as an apply of
// the same object is idempotent, a delete is by UID and finds the object already gone, and a wait
// that is over ends at once. It is noted with the next step that is written, or, when the watch
// window follows it, written at once, to say when the window started. A watch step is not
// written: a run that finishes it after its window passed judges the revision once from what it
// sees, which is what the window's end did. Every other step is written at once, and the plan's
// last one not at all: the operation ends with it, and its journal is deleted.
func (s *session) Completed(ctx context.Context, p *plan.Plan, i int) error {
	if s.j == nil {
		return nil
	}
	step := p.Steps[i]
	s.j.Steps = append(s.j.Steps, step.ID)
	if s.beside == step.ID {
		s.beside = "" // the step did not write its journal beside it: it is written now
	}
	if s.ahead != nil {
		// The journal written ahead records this step done: it is written once that write is.
		wrote := s.ahead.step == step.ID
		if err := s.settle(); err != nil || wrote {
			return err
		}
	}
	if i == len(p.Steps)-1 || step.Action == plan.Watch {
		return nil
	}
	next := p.Steps[i+1]
	if next.Action == plan.Watch && s.j.WatchStarted.IsZero() {
		// The watch window starts now: this write says when, for a run that finishes it.
		s.j.WatchStarted = s.clock()
		return s.write(ctx)
	}
	if objectStep(step) {
		return nil
	}
	return s.write(ctx)
}

// watchStarted is when the operation's watch window started, as its journal says; zero when it
// does not say (no journal, or one written before the window started). resumed says an earlier,
// interrupted run started it.
func (s *session) watchStarted() (started time.Time, resumed bool) {
	if s.j == nil {
		return time.Time{}, false
	}
	return s.j.WatchStarted, s.windowResumed
}

func objectStep(s plan.Step) bool {
	switch s.Action {
	case plan.Apply, plan.WaitReady, plan.Delete, plan.WaitAbsent:
		return true
	}
	return false
}

// hookSucceeded reports whether the journal notes the hooks of event as succeeded.
func (s *session) hookSucceeded(event resource.HookEvent) bool {
	return s.j != nil && s.j.HookSucceeded(string(event))
}

// recordHookSucceeded notes that the hooks of event all succeeded, before they are deleted.
func (s *session) recordHookSucceeded(ctx context.Context, event resource.HookEvent) error {
	if s.j == nil {
		return nil
	}
	s.j.HooksSucceeded = append(s.j.HooksSucceeded, string(event))
	return s.write(ctx)
}

// options are the options of the operation's journal; none before begin.
func (s *session) options() release.JournalOptions {
	if s.j == nil {
		return release.JournalOptions{}
	}
	return s.j.Options
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
func (s *session) end(ctx context.Context, force bool) error {
	// A journal written ahead of a step that failed is deleted as any other; one that could not
	// be written says why.
	unwritten := s.settle()
	begun := s.j != nil || s.resume != nil || force
	s.j, s.resume, s.recovering = nil, nil, false
	if s.jstore == nil || !begun || s.version == "" {
		return unwritten
	}
	wctx, cancel := s.writeContext(ctx)
	defer cancel()
	if err := s.guard(wctx); err != nil {
		return errors.Join(unwritten, err)
	}
	if err := s.jstore.Delete(wctx, s.name, s.version); err != nil {
		return errors.Join(unwritten, s.lose(err))
	}
	s.version = ""
	s.count()
	return unwritten
}

// interrupt marks the journal of an operation stopped by a signal as interrupted, once the lease
// is confirmed.
func (s *session) interrupt(ctx context.Context) error {
	if s.j == nil {
		return nil
	}
	s.failing()
	s.j.State = release.JournalInterrupted
	return s.write(ctx)
}

// hooks runs the hooks of event (see runHooks), and notes in the journal when they all succeeded,
// before they are deleted per hook-succeeded. When an interrupted operation is being finished,
// hooks the journal notes as succeeded are not run again: only their deletion is finished. Other
// hook objects its run left are removed first, except those of hooks without
// before-hook-creation: their policy forbids another run while one may exist, so the run left is
// followed to its outcome instead.
func (o *operation) hooks(ctx context.Context, rel *release.Release, event resource.HookEvent) error {
	if o.hookSucceeded(event) {
		return o.removeSucceededHooks(ctx, rel, event)
	}
	recovering := o.recovering
	if recovering {
		if err := o.removeLeftoverHooks(ctx, rel, event, false); err != nil {
			return err
		}
	}
	_, err := o.runEventHooks(ctx, rel, event, hookRunOptions{resume: recovering, succeeded: func(ctx context.Context) error {
		return o.recordHookSucceeded(ctx, event)
	}})
	return err
}

// removeSucceededHooks deletes the hook objects of event with the hook-succeeded policy that
// exist: the hooks succeeded, and the run that ran them was interrupted before it deleted them.
func (o *operation) removeSucceededHooks(ctx context.Context, rel *release.Release, event resource.HookEvent) error {
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
		if err := o.Cluster.Normalize(obj, rel.Namespace); err != nil {
			continue // its kind is gone: nothing of it is left
		}
		if err := o.removeHook(ctx, event, resource.IdentityOf(obj), ""); err != nil {
			errs = append(errs, fmt.Errorf("%s: delete the hooks that succeeded (hook-succeeded): %w", event, err))
		}
	}
	return errors.Join(errs...)
}

// removeLeftoverHooks deletes the hook objects of event that exist: left by a run that was
// interrupted before it could delete them. Unless all is set, the objects of hooks without
// before-hook-creation are kept, to be followed.
func (o *operation) removeLeftoverHooks(ctx context.Context, rel *release.Release, event resource.HookEvent, all bool) error {
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
		if err := o.Cluster.Normalize(obj, rel.Namespace); err != nil {
			continue // its kind is gone: nothing of it is left
		}
		if err := o.removeHook(ctx, event, resource.IdentityOf(obj), ""); err != nil {
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
