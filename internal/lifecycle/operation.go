package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// operation is one operation under way: the collaborators it was started with (Deps, which it
// never changes for its caller) and what the operation owns: its journal, its lease, whether a
// signal asked it to stop, the runs it executed and what it went on without. Its methods that
// keep the journal do nothing on a nil operation.
type operation struct {
	Deps
	name string
	// jstore keeps the release's journal; nil when the operation keeps none (a dry run).
	jstore JournalStore
	// writes counts the journal's writes (Deps.JournalWritten is told of each).
	writes int
	// windowResumed says the watch window of the journal's plan was started by an earlier run,
	// which this one finishes.
	windowResumed bool
	// stop ends on a signal; nil when nothing stops the operation but its deadline.
	stop context.Context
	// runs collects the plans the operation executes.
	runs *runs
	// parsed holds the documents of the manifests the operation read (documents), each parsed
	// once: the rendered manifest's, when it rendered one.
	parsed *resource.Parsed
	// terminating, when set, lets the operation go on without what the API server refuses to
	// create because the release's namespace is being deleted: its hooks (collected here), its
	// lease and its journal.
	terminating *terminating

	// lease is the release's lease the operation holds; nil when it runs without one. fence ends
	// when the lease is lost; it is the parent of the writes after a failure.
	lease *release.Lease
	fence context.Context
	// version is the version of the release's journal as the operation last read or wrote it, ""
	// when it saw none: its journal writes are conditional on it.
	version string
	// failed says the operation failed (or stopped): each write from then on checks the lease
	// first. lost, once set, says the release is another's now: nothing more is written.
	failed bool
	lost   error

	// j is the journal of the operation being carried out; nil before begin.
	j *release.Journal
	// resume is the journal of the interrupted operation being finished: its completed steps and
	// hooks are skipped. recovering is set while an interrupted operation is finished, journal or
	// not: hook objects left by the interrupted run are removed before their event runs again.
	resume     *release.Journal
	recovering bool
	// preflighted says the operation's preflight ran: it checks the operation's own plan, once,
	// and never an undo or the finishing of an interrupted operation.
	preflighted bool
	// acted are the actions the operation took, in order, as Next decided them.
	acted []Action
}

// Grace is how long an operation goes on past its deadline to say what came of it: the report
// of a hook that did not finish, the diagnosis of the objects a step left pending, the failure
// record, the journal's last state, giving the lease back. It is one grace, which all of these
// share: they end by the time it does, Grace after the deadline, or as soon as the lease is lost
// (an operation that lost its release to another says nothing more). Each of them on its own
// takes Grace at most, however early it starts.
const Grace = 10 * time.Second

// writeContext is the context of a write that must be made even when ctx ended (the deadline, a
// signal): see graceContext.
func (d *operation) writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return d.graceContext(ctx)
}

// graceContext is the context of what must be said even when ctx ended (the deadline, a signal):
// a write, the report of a hook, the diagnosis of what blocked a step. It has ctx's values, Grace
// at most, and ends with the operation's grace or when the lease is lost (see fenced).
func (d *operation) graceContext(ctx context.Context) (context.Context, context.CancelFunc) {
	fenced, cancelFenced := d.fenced(ctx)
	gctx, cancel := context.WithTimeoutCause(fenced, Grace, fmt.Errorf("what had to be said after the operation's end took over %s", Grace))
	return gctx, func() { cancel(); cancelFenced() }
}

// fenced is the parent of work done after a failure or the deadline (an undo, a write, a
// report): without ctx's cancellation (the deadline, a signal), ended when the lease is lost, and
// at the end of the operation's grace, Grace after its deadline (the fence, see hold). An
// operation that holds no lease (a dry run) has the grace after ctx's deadline; a context
// without a deadline has Grace from now.
func (d *operation) fenced(ctx context.Context) (context.Context, context.CancelFunc) {
	if d != nil && d.fence != nil {
		return context.WithCancel(d.fence)
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now()
	}
	return context.WithDeadline(context.WithoutCancel(ctx), dl.Add(Grace))
}

// failing notes that the operation failed: from now on, each of its writes checks the lease first.
func (d *operation) failing() {
	if d != nil {
		d.failed = true
	}
}

// guard confirms, before a write, that the release is still the operation's: no other operation
// changed its journal, and its lease still names it (Lease.Confirm renews it, asking the API
// server, unless it was acquired or renewed a moment ago; a renewed lease stays the operation's
// for a lease duration, longer than the write takes). An error says it is not, or that this
// cannot be told: the write must not be made.
func (d *operation) guard(ctx context.Context) error {
	switch {
	case d == nil:
		return nil
	case d.lost != nil:
		return d.lost
	case d.lease == nil:
		return nil
	}
	return d.lose(d.lease.Confirm(ctx))
}

// guardAfterFailure is guard once the operation failed, and nothing before: until then, its
// lease is renewed and watched by Lease.Keep, which ends its context when the lease is lost.
func (d *operation) guardAfterFailure(ctx context.Context) error {
	if d == nil || (!d.failed && d.lost == nil) {
		return nil
	}
	return d.guard(ctx)
}

// lose notes err when it says the release is another's now (release.ErrLost), and returns it.
func (d *operation) lose(err error) error {
	if errors.Is(err, release.ErrLost) && d.lost == nil {
		d.lost = err
	}
	return err
}

// stopped reports whether a signal asked the operation to stop.
func (d *operation) stopped() bool { return d != nil && d.stop != nil && d.stop.Err() != nil }

// checkpoint is a safe point: it returns ErrInterrupted when a signal asked to stop.
func (d *operation) checkpoint() error {
	if d.stopped() {
		return ErrInterrupted
	}
	return nil
}

// operation names what the journal records (for messages).
func (d *operation) operation() release.Operation {
	if d == nil || d.j == nil {
		return "operation"
	}
	return d.j.Operation
}

// revisionOperation does what w asks of release name, an install, upgrade, rollback or test:
// a dry run at once under the operation's deadline; otherwise holding the release's lease, with
// what an interrupted operation needs done first (see drive). do runs the action decided, and
// returns the revision it recorded (or would record); for Finish, the one finished. The
// preflight runs in do, once its plan is known, before its first change.
func (d Deps) revisionOperation(ctx context.Context, w Wanted, name string, wait WaitOptions, dryRun DryRun,
	do func(context.Context, *operation, Action) (*release.Release, error)) (*Result, error) {
	start := d.now()
	var o *operation
	var rel *release.Release
	var err error
	switch {
	case dryRun != NoDryRun:
		o = d.dryRun(name)
		dctx, cancel := wait.deadline(ctx)
		defer cancel()
		var s State
		var acts []Action
		if dryRun != ClientDryRun || w.Operation != release.OpInstall {
			// A client dry run of an install reads no cluster: it renders a first revision.
			s, err = o.readState(dctx, name)
		}
		if err == nil {
			acts, err = Next(s, w)
		}
		if err == nil && len(acts) > 0 {
			o.acted = acts[len(acts)-1:]
			rel, err = do(dctx, o, acts[len(acts)-1])
		}
	default:
		o = d.start(name, ctx)
		err = o.operate(ctx, wait, func(ctx context.Context, d *operation) error {
			return d.drive(ctx, w, func(ctx context.Context, a Action, s State) error {
				var err error
				if a == ActFinish {
					rel = s.Interrupted.latest(ctx, d.Deps)
					return nil
				}
				rel, err = do(ctx, d, a)
				return err
			})
		})
	}
	var ni *NotInstalledError
	if errors.As(err, &ni) {
		ni.Release = name
	}
	return &Result{Release: rel, Runs: o.runs.all(), Plan: o.runs.planned, Actions: o.acted, Duration: d.now().Sub(start)}, err
}
