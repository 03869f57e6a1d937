package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

func (d *operation) engineOptions(p *prepared, before map[resource.Identity]*unstructured.Unstructured, w WaitOptions) engine.Options {
	o := engine.DefaultOptions()
	if p != nil {
		o.Objects = p.byID
	}
	o.Before = before
	o.Readiness = readiness.Options{WaitForJobs: w.WaitForJobs, Checks: d.HealthChecks}
	o.Events = d.Events
	return o
}

// fail records the operation's revision as failed with the cause, deletes what it created
// (cleanup, when not nil: the objects it would create) and undoes it (undo, when not nil), within
// what is left of the operation's deadline (ctx's): the cleanup and the undo get no time of their
// own, and none at all when the deadline is what ended the operation. The record is written even
// then, within the operation's Grace. An operation that lost the release to another (its lease taken over,
// its journal changed) writes neither: each write after the failure is made once the lease is
// confirmed as the operation's (operation.guard), and the undo ends when the lease is lost.
func (d *operation) fail(ctx context.Context, r *runner, pl *plan.Plan, cause error, cleanup []*unstructured.Unstructured, undo func(context.Context) error) error {
	rel, what := r.rel, r.failure
	fe := &FailedError{Release: rel.Name, Revision: rel.Version, What: what, Err: cause}
	if d.stopped() || !recorded(d, r, pl) {
		// Stopped by a signal: the revision stays pending, and its journal says how far it got.
		// Or nothing was recorded yet: there is nothing to mark.
		return fe
	}
	d.failing()
	// The record must be written even when the operation ran out of time.
	wctx, cancel := d.writeContext(ctx)
	defer cancel()
	if fe.Lost = d.guard(wctx); fe.Lost != nil {
		return fe
	}
	rel.Info.LastDeployed = d.now()
	if err := d.recordFailure(wctx, d.operation(), rel, fmt.Sprintf("%s: %v", what, cause)); err != nil {
		fe.RecordErr = err
	}
	if cleanup != nil {
		if fe.Lost = d.guard(wctx); fe.Lost != nil {
			return fe
		}
		fe.Cleanup = true
		fe.CleanupErr = d.withRemaining(ctx, func(ctx context.Context) error { return d.cleanup(ctx, rel, cleanup) })
	}
	if undo == nil {
		return fe
	}
	if fe.Lost = d.guard(wctx); fe.Lost != nil {
		return fe
	}
	fe.Undo = true
	fe.UndoErr = d.withRemaining(ctx, undo)
	return fe
}

// withRemaining runs fn, work after a failure, within what is left of the operation's deadline
// (remaining); a *NoTimeLeftError when nothing is.
func (d *operation) withRemaining(ctx context.Context, fn func(context.Context) error) error {
	uctx, cancel, err := d.remaining(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return fn(uctx)
}

// recordFailure records rel as failed, with description, as a plan of its own: one Record step,
// which the engine runs and journals as it does every step, so that an operation stopped before
// it is finished by recording the failure.
func (d *operation) recordFailure(ctx context.Context, op release.Operation, rel *release.Release, description string) error {
	pl := &plan.Plan{Steps: []plan.Step{recordStep(release.StatusFailed, rel.Version, "the operation failed")}}
	pl, err := d.begin(ctx, op, rel.Version, pl, d.options())
	if err != nil {
		return err
	}
	opts := engine.DefaultOptions()
	opts.Events = d.Events
	_, err = d.execute(ctx, op, rel.Version, pl, &runner{d: d, rel: rel, success: description}, opts)
	return err
}

// recorded reports whether the plan's revision is recorded: its pending record was written, now
// or by the interrupted run this one finishes, or it was recorded before the plan.
func recorded(d *operation, r *runner, pl *plan.Plan) bool {
	for _, s := range pl.Steps {
		if s.Action == plan.Record && s.Revision == r.rel.Version && strings.HasPrefix(s.Status, "pending-") {
			return r.created || d.Done(s.ID)
		}
	}
	return true
}

// FailedError is an operation that failed after it recorded its revision, which is now recorded
// as failed, unless the operation lost the release to another first.
type FailedError struct {
	Release  string
	Revision int
	// What says what failed, as the record's description does.
	What string
	Err  error
	// RecordErr says the failure could not be recorded.
	RecordErr error
	// Lost says the operation lost the release to another (release.ErrLost), or could not
	// confirm it still held it, before it recorded the failure or undid the operation: it wrote
	// neither.
	Lost error
	// Cleanup says the objects the operation created were deleted on failure (cleanup on fail):
	// CleanupErr is why that did not succeed, nil when it did.
	Cleanup    bool
	CleanupErr error
	// Undo says the operation was undone on failure (rollback on failure): UndoErr is why that
	// did not succeed, nil when it did.
	Undo    bool
	UndoErr error
}

func (e *FailedError) Error() string {
	s := fmt.Sprintf("%s: %v", e.What, e.Err)
	if e.RecordErr != nil {
		s += "\n" + e.RecordErr.Error()
	}
	if e.Lost != nil {
		s += "\nthe failure is not recorded, nor undone: " + e.Lost.Error()
	}
	var late *NoTimeLeftError
	switch {
	case e.Cleanup && errors.As(e.CleanupErr, &late):
		s += "\nwhat it created is not deleted: no time was left before the operation's deadline"
	case e.Cleanup && e.CleanupErr != nil:
		s += fmt.Sprintf("\ndeleting what it created failed too: %v", e.CleanupErr)
	case e.Cleanup:
		s += "\ncleaned up on failure: the objects it created were deleted"
	}
	switch {
	case e.Undo && errors.As(e.UndoErr, &late):
		s += "\nnot rolled back on failure: no time was left before the operation's deadline"
	case e.Undo && e.UndoErr != nil:
		s += fmt.Sprintf("\nrolling back on failure failed too: %v", e.UndoErr)
	case e.Undo:
		s += "\nrolled back on failure: the failed revision was rolled back"
	}
	return s
}

func (e *FailedError) Unwrap() []error {
	var out []error
	for _, err := range []error{e.Err, e.RecordErr, e.Lost, e.CleanupErr, e.UndoErr} {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// union returns the objects of a and b, each identity once (a's copy first).
func union(a, b []*unstructured.Unstructured) []*unstructured.Unstructured {
	seen := map[resource.Identity]bool{}
	var out []*unstructured.Unstructured
	for _, obj := range append(append([]*unstructured.Unstructured{}, a...), b...) {
		id := resource.IdentityOf(obj)
		if !seen[id] {
			seen[id] = true
			out = append(out, obj)
		}
	}
	return out
}
