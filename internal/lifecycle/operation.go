package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/plan"
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

// errGraceOver is the cause of the end of an operation's grace.
var errGraceOver = fmt.Errorf("the operation's grace of %s after its deadline ended", Grace)

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
	return context.WithDeadlineCause(context.WithoutCancel(ctx), dl.Add(Grace), errGraceOver)
}

// remaining is the context of an undo after a failure: without ctx's cancellation by a signal or
// by the failure, ended when the lease is lost, and with ctx's deadline, the operation's: the
// undo has what is left of it. When nothing is left, it returns a *NoTimeLeftError; ctx must
// have the operation's deadline (every operation sets it before its first call).
func (d *operation) remaining(ctx context.Context) (context.Context, context.CancelFunc, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return nil, nil, errors.New("not started: the operation has no deadline to take what is left of")
	}
	left := time.Until(dl)
	if left <= 0 {
		return nil, nil, &NoTimeLeftError{Cause: context.Cause(ctx)}
	}
	fenced, cancelFenced := d.fenced(ctx)
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

// failing notes that the operation failed: from now on, each of its writes checks the lease first.
func (d *operation) failing() {
	if d != nil {
		d.failed = true
	}
}

// guard confirms, before a write, that the release is still the operation's: no other operation
// changed its journal, and its lease, renewed now, still names it (Lease.Renew asks the API
// server; a renewed lease stays the operation's for a lease duration, longer than the write
// takes). An error says it is not, or that this cannot be told: the write must not be made.
func (d *operation) guard(ctx context.Context) error {
	switch {
	case d == nil:
		return nil
	case d.lost != nil:
		return d.lost
	case d.lease == nil:
		return nil
	}
	return d.lose(d.lease.Renew(ctx))
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

// execute runs the operation's plan for revision through the engine, journaled, with steps
// running the lifecycle's own steps, and adds what it did to the operation's runs.
func (d *operation) execute(ctx context.Context, op release.Operation, revision int, pl *plan.Plan, steps engine.StepRunner, opts engine.Options) (*engine.Result, error) {
	opts.Steps = steps
	if opts.Journal == nil {
		opts.Journal = d
	}
	// What blocked a step is diagnosed within the operation's grace.
	opts.Afterwards = d.graceContext
	res, err := engine.Execute(ctx, d.Cluster, pl, opts)
	if res != nil {
		d.runs.add(Run{Operation: op, Revision: revision, Plan: pl, Changes: res.Changes, Steps: res.Steps})
	}
	return res, err
}

// executeOnce runs pl, whose steps can all be run again, through the engine without writing a
// journal: a plan of steps before the release's journal can be kept (its namespace is created),
// or of deletions an interrupted run of them finishes anyway. A signal still stops it between
// steps.
func (d *operation) executeOnce(ctx context.Context, op release.Operation, revision int, pl *plan.Plan, steps engine.StepRunner) error {
	opts := engine.DefaultOptions()
	opts.Events = d.Events
	opts.Journal = unjournalled{d}
	_, err := d.execute(ctx, op, revision, pl, steps, opts)
	return err
}

// unjournalled is the engine.Journal of a plan that keeps none: it only stops at a signal.
type unjournalled struct{ d *operation }

func (u unjournalled) Done(string) bool                                 { return false }
func (u unjournalled) Checkpoint() error                                { return u.d.checkpoint() }
func (u unjournalled) Completed(context.Context, *plan.Plan, int) error { return nil }

// recordAfter runs step, the record of an operation that failed or stopped, as a plan of its own
// with the runner steps, once the operation's own plan ended (ctx is then a graceContext). It
// journals nothing, and runs even after a signal, whose record must be written all the same: the
// operation's journal stays as its own plan left it, and a crash before the record is written is
// finished from there.
func (d *operation) recordAfter(ctx context.Context, op release.Operation, revision int, step plan.Step, steps engine.StepRunner) error {
	opts := engine.DefaultOptions()
	opts.Events = d.Events
	opts.Journal = unstoppable{}
	_, err := d.execute(ctx, op, revision, &plan.Plan{Steps: []plan.Step{step}}, steps, opts)
	return err
}

// unstoppable is the engine.Journal of a plan that keeps none and that a signal does not stop.
type unstoppable struct{}

func (unstoppable) Done(string) bool                                 { return false }
func (unstoppable) Checkpoint() error                                { return nil }
func (unstoppable) Completed(context.Context, *plan.Plan, int) error { return nil }

// revisionPlan builds the object steps from in and wraps them per pol, with rel's hooks of the
// operation's events (none with noHooks).
func (d *operation) revisionPlan(in plan.Input, pol revisionPolicy, rel *release.Release, noHooks bool) (*plan.Plan, error) {
	events := hookEvents(pol.op)
	pre, post := events[0], events[1]
	objects, err := plan.Build(in)
	if err != nil {
		return nil, err
	}
	if pol.pre, err = eventHooks(d.Cluster, rel, pre, noHooks); err != nil {
		return nil, err
	}
	if pol.post, err = eventHooks(d.Cluster, rel, post, noHooks); err != nil {
		return nil, err
	}
	return revisionPlan(objects, pol), nil
}

// Result is what an install, upgrade or rollback did.
type Result struct {
	// Release is the newest revision afterwards: the one the operation recorded, or for a dry
	// run the one it would record.
	Release *release.Release `json:"-"`
	// Runs are the plans the operation executed, in order: an interrupted operation it finished
	// first, its own, and the undo of a failure (rollback on failure).
	Runs []Run `json:"runs,omitempty"`
	// Plan, for a server-side dry run, is the plan the operation would execute.
	Plan *plan.Plan `json:"plan,omitempty"`
	// Actions are what the operation did, in order, as Next decided them: what an interrupted
	// operation needed first (finish, undo, remove-hooks), then the operation asked for (an
	// upgrade with install of a release that has none installs it). A dry run's is the one it
	// previews.
	Actions []Action `json:"actions,omitempty"`
	// Duration is how long the whole operation took.
	Duration time.Duration `json:"duration"`
}

// Run is one plan an operation executed, and what it did.
type Run struct {
	Operation release.Operation `json:"operation"`
	Revision  int               `json:"revision"`
	Plan      *plan.Plan        `json:"plan"`
	// Changes say what happened to each object applied, left alone or deleted, in the order of
	// the plan's steps, and how long it took.
	Changes engine.ChangeSet `json:"changes"`
	// Steps are the steps that ran to success, with their durations (a step that failed ends
	// the list; steps an interrupted run completed are not in it).
	Steps []engine.StepRun `json:"steps,omitempty"`
}

// runs collects the runs of one operation, and the plan of a dry run.
type runs struct {
	mu      sync.Mutex
	list    []Run
	planned *plan.Plan
}

func (r *runs) plan(p *plan.Plan) {
	if r != nil {
		r.planned = p
	}
}

func (r *runs) add(run Run) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, run)
}

func (r *runs) all() []Run {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list)
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
		o = d.start(name)
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
