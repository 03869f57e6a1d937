package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// undo is what an operation's failure does besides recording it: delete what it created
// (cleanup on fail) and undo it (rollback on failure). The zero undo does neither.
type undo struct {
	// run undoes the failed operation, given why it failed; nil for none. It runs for any
	// failure with onFailure (rollback on failure), for a regression in the watch window with
	// onRegression.
	run                     func(ctx context.Context, cause error) error
	onFailure, onRegression bool
	// cleanupOnFail deletes first the objects the operation created; with onlyApplying, only when
	// it failed applying them (a rollback's, as Helm's).
	cleanupOnFail, onlyApplying bool
}

// of is what undoes the failure cause; nil when nothing does.
func (u undo) of(cause error) func(context.Context) error {
	if u.run == nil {
		return nil
	}
	var re *cluster.RegressionError
	if regressed := errors.As(cause, &re); (regressed && !u.onRegression) || (!regressed && !u.onFailure) {
		return nil
	}
	return func(ctx context.Context) error { return u.run(ctx, cause) }
}

// failureDescription is what the record of revision, which failed with cause, says: what failed
// and why; for a regression in the watch window, in one line.
func failureDescription(what string, revision int, cause error) string {
	var re *cluster.RegressionError
	if errors.As(cause, &re) {
		return fmt.Sprintf("%s: revision %d degraded in its watch window: %s", what, revision, regression(re))
	}
	return fmt.Sprintf("%s: %v", what, cause)
}

// undoDescription is the description of the rollback to revision to that undoes revision
// failed, which failed with cause: why it was made, when a regression in the watch window made it;
// "" (the rollback's own) otherwise.
func undoDescription(to, failed int, cause error) string {
	var re *cluster.RegressionError
	if !errors.As(cause, &re) {
		return ""
	}
	return fmt.Sprintf("Rollback to %d: revision %d degraded in its watch window: %s", to, failed, regression(re))
}

// regression says in one line what regressed, and when: "OBJECT: [Pod NAME: ]WHAT (since|at TIME)".
func regression(re *cluster.RegressionError) string { return re.Error() }

// may says whether a failure may be undone: time is kept for it.
func (u undo) may() bool { return u.run != nil && (u.onFailure || u.onRegression) }

// fail records the operation's revision as failed with the cause, deletes what it created
// (cleanup, when not nil: the objects it would create) and undoes it (undo, when not nil), within
// what is left of the operation's deadline (ctx's): the cleanup and the undo get no time of their
// own, and none at all when the deadline is what ended the operation. The record is written even
// then, within the operation's Grace. An operation that lost the release to another (its lease taken over,
// its journal changed) writes neither: each write after the failure is made once the lease is
// confirmed as the operation's (operation.guard), and the undo ends when the lease is lost.
func (o *operation) fail(ctx context.Context, r *runner, pl *plan.Plan, cause error, cleanup []*unstructured.Unstructured, undo func(context.Context) error) error {
	rel, what := r.rel, r.failure
	fe := &FailedError{Release: rel.Name, Revision: rel.Version, What: what, Err: cause}
	if o.stopped() || !recorded(o, r, pl) {
		// Stopped by a signal: the revision stays pending, and its journal says how far it got.
		// Or nothing was recorded yet: there is nothing to mark.
		return fe
	}
	o.failing()
	// The record must be written even when the operation ran out of time.
	wctx, cancel := o.writeContext(ctx)
	defer cancel()
	if fe.Lost = o.guard(wctx); fe.Lost != nil {
		return fe
	}
	rel.Info.LastDeployed = o.now()
	if err := o.recordFailure(wctx, o.operation(), rel, failureDescription(what, rel.Version, cause)); err != nil {
		fe.RecordErr = err
	}
	if cleanup != nil {
		if fe.Lost = o.guard(wctx); fe.Lost != nil {
			return fe
		}
		fe.Cleanup = true
		fe.CleanupErr = o.withRemaining(ctx, func(ctx context.Context) error { return o.cleanup(ctx, rel, cleanup) })
	}
	if undo == nil {
		return fe
	}
	if fe.Lost = o.guard(wctx); fe.Lost != nil {
		return fe
	}
	fe.Undo = true
	fe.UndoErr = o.withRemaining(ctx, undo)
	return fe
}

// withRemaining runs fn, work after a failure, within what is left of the operation's deadline
// (remaining); a *NoTimeLeftError when nothing is.
func (o *operation) withRemaining(ctx context.Context, fn func(context.Context) error) error {
	uctx, cancel, err := o.remaining(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return fn(uctx)
}

// recordFailure records rel as failed, with description, as a plan of its own: one Record step,
// which the engine runs and journals as it does every step, so that an operation stopped before
// it is finished by recording the failure.
func (o *operation) recordFailure(ctx context.Context, op release.Operation, rel *release.Release, description string) error {
	pl := &plan.Plan{Steps: []plan.Step{recordStep(release.StatusFailed, rel.Version, "the operation failed")}}
	pl, err := o.begin(ctx, op, rel.Version, pl, o.options())
	if err != nil {
		return err
	}
	opts := engine.DefaultOptions()
	opts.Events = o.Events
	_, err = o.execute(ctx, op, rel.Version, pl, &runner{d: o, rel: rel, success: description}, opts)
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

// toCreate returns the desired objects that do not exist before the operation (before): those it
// creates, which a cleanup on failure deletes. Never nil, so that a cleanup with nothing to
// delete still says it was done.
func toCreate(desired []*unstructured.Unstructured, facts *plan.Objects) []*unstructured.Unstructured {
	out := []*unstructured.Unstructured{}
	for _, obj := range desired {
		if facts.LiveOf(resource.IdentityOf(obj)) == nil {
			out = append(out, obj)
		}
	}
	return out
}

// cleanup deletes, as a plan of its own (plan.Cleanup), the objects of created that the failed
// operation that recorded rel did create: those that exist now and are the release's own by
// Helm's metadata. Each is deleted by the UID it has now and waited for until gone.
func (o *operation) cleanup(ctx context.Context, rel *release.Release, created []*unstructured.Unstructured) error {
	now, err := live(ctx, o.Cluster, created)
	if err != nil {
		return err
	}
	var own []*unstructured.Unstructured
	for _, obj := range created {
		l := now[resource.IdentityOf(obj)]
		if l == nil {
			continue
		}
		if name, ns, ok := resource.OwnedBy(l); ok && name == rel.Name && ns == rel.Namespace {
			own = append(own, obj)
		}
	}
	pl := plan.Cleanup(own, now)
	if len(pl.Steps) == 0 {
		return nil
	}
	op := o.operation()
	if pl, err = o.begin(ctx, op, rel.Version, pl, o.options()); err != nil {
		return err
	}
	_, err = o.execute(ctx, op, rel.Version, pl, &runner{d: o, rel: rel}, o.engineOptions(nil, WaitOptions{}))
	return err
}

// failedApplying says whether err is the failure of a step that applies objects.
func failedApplying(err error) bool {
	var se *engine.StepError
	return errors.As(err, &se) && se.Action == plan.Apply
}

// remaining is the context of an undo after a failure: without ctx's cancellation by a signal or
// by the failure, ended when the lease is lost, and with ctx's deadline, the operation's: the
// undo has what is left of it. When nothing is left, it returns a *NoTimeLeftError; ctx must
// have the operation's deadline (every operation sets it before its first call).
func (o *operation) remaining(ctx context.Context) (context.Context, context.CancelFunc, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return nil, nil, errors.New("not started: the operation has no deadline to take what is left of")
	}
	left := time.Until(dl)
	if left <= 0 {
		return nil, nil, &NoTimeLeftError{Cause: context.Cause(ctx)}
	}
	fenced, cancelFenced := o.fenced(ctx)
	uctx, cancel := context.WithDeadlineCause(fenced, dl,
		fmt.Errorf("timed out at the operation's deadline, %s after the undo started with what was left of it", left.Round(time.Millisecond)))
	return uctx, func() { cancel(); cancelFenced() }, nil
}

// NoTimeLeftError says an undo did not start: the operation's deadline had passed. Cause is
// what ended the operation's context.
type NoTimeLeftError struct {
	Cause error
}

func (e *NoTimeLeftError) Error() string {
	return "not started: no time was left before the operation's deadline"
}

func (e *NoTimeLeftError) Unwrap() error { return e.Cause }
