package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/release"
)

// A session is an operation's hold on its release, from taking its lease to giving it back: the
// lease and the fence that ends with it, the one grace after the deadline (Grace), what a signal
// asks of it, whether the operation failed or lost the release, and the journal it keeps under
// the lease (journal.go, the one place that sets the journal's fields). Deps.operationOn makes it;
// open opens it and operate runs an operation in it.
type session struct {
	// name is the release's; holder runs the operation, clock tells its time, emit tells of its
	// progress and journalWritten of each journal write (Deps).
	name           string
	holder         release.Holder
	clock          func() time.Time
	emit           func(engine.Event)
	journalWritten func(n int)
	// stop ends on a signal; nil when nothing stops the operation but its deadline.
	stop context.Context
	// lease is the release's lease the session holds; nil when it runs without one. fence ends
	// when the lease is lost; it is the parent of the writes after a failure. open sets both.
	lease *release.Lease
	fence context.Context
	// failed says the operation failed (or stopped): each write from then on checks the lease
	// first (failing). lost, once set, says the release is another's now: nothing more is
	// written (lose).
	failed bool
	lost   error

	// jstore keeps the release's journal; nil when the operation keeps none (a dry run).
	jstore JournalStore
	// version is the version of the release's journal as the operation last read or wrote it, ""
	// when it saw none: its journal writes are conditional on it.
	version string
	// writes counts the journal's writes (Deps.JournalWritten is told of each).
	writes int
	// j is the journal of the operation being carried out; nil before begin. beside names the
	// record step its first write goes out with (journalBeside), "" when none does; ahead is
	// that write under way (writeAhead), nil when none is.
	j      *release.Journal
	beside string
	ahead  *journalAhead
	// resume is the journal of the interrupted operation being finished: its completed steps and
	// hooks are skipped. recovering is set while an interrupted operation is finished, journal or
	// not: hook objects left by the interrupted run are removed before their event runs again
	// (takeOver).
	resume     *release.Journal
	recovering bool
	// windowResumed says the watch window of the journal's plan was started by an earlier run,
	// which this one finishes.
	windowResumed bool
	// terminating, when set, lets the operation go on without what the API server refuses to
	// create because the release's namespace is being deleted: its hooks (collected here), its
	// lease and its journal.
	terminating *terminating
}

// Grace is how long an operation goes on past its deadline to say what came of it: the report
// of a hook that did not finish, the diagnosis of the objects a step left pending, the failure
// record, the journal's last state, giving the lease back. It is one grace, which all of these
// share: they end by the time it does, Grace after the deadline, or as soon as the lease is lost
// (an operation that lost its release to another says nothing more). Each of them on its own
// takes Grace at most, however early it starts.
const Grace = 10 * time.Second

// Graced is the context of what a caller that runs operations (the controller) says once its
// work ended at its deadline or was stopped, such as the status that tells what came of it: ctx's
// values without its cancellation, for the one Grace an operation has past its deadline. It ends
// Grace from now at the latest, and never later than Grace after ctx's deadline: what is said
// long after the deadline is not said. As an operation's writes check its lease first (see
// session.guard), the caller checks before such a write that it still holds what lets it write.
func Graced(ctx context.Context) (context.Context, context.CancelFunc) {
	graced, cancel := context.WithTimeout(context.WithoutCancel(ctx), Grace)
	dl, ok := ctx.Deadline()
	if !ok || !dl.Add(Grace).Before(time.Now().Add(Grace)) {
		return graced, cancel
	}
	// The work's deadline passed: its grace ends earlier than Grace from now.
	cause := fmt.Errorf("what had to be said after the work's end took over %s", Grace)
	bounded, cancelBounded := context.WithDeadlineCause(graced, dl.Add(Grace), cause)
	return bounded, func() { cancelBounded(); cancel() }
}

// writeContext is the context of a write that must be made even when ctx ended (the deadline, a
// signal): see graceContext.
func (s *session) writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return s.graceContext(ctx)
}

// graceContext is the context of what must be said even when ctx ended (the deadline, a signal):
// a write, the report of a hook, the diagnosis of what blocked a step. It has ctx's values, Grace
// at most, and ends with the operation's grace or when the lease is lost (see fenced).
func (s *session) graceContext(ctx context.Context) (context.Context, context.CancelFunc) {
	fenced, cancelFenced := s.fenced(ctx)
	gctx, cancel := context.WithTimeoutCause(fenced, Grace, fmt.Errorf("what had to be said after the operation's end took over %s", Grace))
	return gctx, func() { cancel(); cancelFenced() }
}

// fenced is the parent of work done after a failure or the deadline (an undo, a write, a
// report): without ctx's cancellation (the deadline, a signal), ended when the lease is lost, and
// at the end of the operation's grace, Grace after its deadline (the fence, see hold). An
// operation that holds no lease (a dry run) has the grace after ctx's deadline; a context
// without a deadline has Grace from now.
func (s *session) fenced(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.fence != nil {
		return context.WithCancel(s.fence)
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now()
	}
	return context.WithDeadline(context.WithoutCancel(ctx), dl.Add(Grace))
}

// failing notes that the operation failed: from now on, each of its writes checks the lease first.
func (s *session) failing() { s.failed = true }

// guard confirms, before a write, that the release is still the operation's: no other operation
// changed its journal, and its lease still names it (Lease.Confirm renews it, asking the API
// server, unless it was acquired or renewed a moment ago; a renewed lease stays the operation's
// for a lease duration, longer than the write takes). An error says it is not, or that this
// cannot be told: the write must not be made.
func (s *session) guard(ctx context.Context) error {
	switch {
	case s.lost != nil:
		return s.lost
	case s.lease == nil:
		return nil
	}
	return s.lose(s.lease.Confirm(ctx))
}

// guardAfterFailure is guard once the operation failed, and nothing before: until then, its
// lease is renewed and watched by Lease.Keep, which ends its context when the lease is lost.
func (s *session) guardAfterFailure(ctx context.Context) error {
	if !s.failed && s.lost == nil {
		return nil
	}
	return s.guard(ctx)
}

// lose notes err when it says the release is another's now (release.ErrLost), and returns it.
func (s *session) lose(err error) error {
	if errors.Is(err, release.ErrLost) && s.lost == nil {
		s.lost = err
	}
	return err
}

// stopped reports whether a signal asked the operation to stop.
func (s *session) stopped() bool { return s.stop != nil && s.stop.Err() != nil }

// checkpoint is a safe point: it returns ErrInterrupted when a signal asked to stop.
func (s *session) checkpoint() error {
	if s.stopped() {
		return ErrInterrupted
	}
	return nil
}

// ErrInterrupted is the cause of an operation stopped by a signal.
var ErrInterrupted = errors.New("interrupted")

// InterruptedError says that an operation stopped, on a signal, at a safe point, and how to go on.
type InterruptedError struct {
	Release   string
	Operation release.Operation
	Err       error
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("%s of release %s interrupted; its journal records how far it got", e.Operation, e.Release)
}

func (e *InterruptedError) Is(target error) bool { return target == ErrInterrupted }
func (e *InterruptedError) Unwrap() error        { return e.Err }

// operate runs fn as the operation on its release, started with ctx as what stops it (see
// Deps.start), in its session: it opens it (open: the release's lease, held while fn runs), and
// deletes the operation's journal when fn ends, unless a signal (ctx ending) stopped it: the
// journal is then marked interrupted. fn runs with a context that a signal does not cancel: it
// stops at the next safe point instead (between steps), and waits are cut short. The
// operation's deadline (w.Timeout) starts here and bounds everything: waiting for the lease,
// finishing an interrupted operation first, and every step.
func (o *operation) operate(ctx context.Context, w WaitOptions, fn func(context.Context) error) error {
	// The work goes on past a signal (it stops at a safe point instead), never past the
	// deadline: open sets it on this context, whose own bound, a moment later, only backs it up.
	run, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.limit()+deadlineBackup)
	defer cancel()
	work, closeSession, err := o.open(ctx, run, w)
	if err != nil {
		return err
	}
	defer closeSession()
	if o.Precondition != nil {
		if err := o.Precondition(work); err != nil {
			return err // nothing was done: no journal to end
		}
	}
	err = fn(work)
	if err != nil && o.stopped() {
		ie := &InterruptedError{Release: o.name, Operation: o.operation(), Err: err}
		return joinOnce(ie, o.interrupt(ctx))
	}
	return joinOnce(err, o.end(ctx, false))
}

// deadlineBackup is how far past the operation's deadline the bound of its signal-proof context
// lies: the deadline (with its cause) always ends the work first.
const deadlineBackup = time.Second

// joinOnce joins err and then, what came of the writes after err, saying once that the release
// was lost to another operation.
func joinOnce(err, then error) error {
	if errors.Is(err, release.ErrLost) && errors.Is(then, release.ErrLost) {
		return err
	}
	return errors.Join(err, then)
}

// open opens the operation's session: it takes the release's lease (waiting until ctx or the
// deadline ends) and renews it until closed. It returns the context of the work, made from run
// with the deadline w.Timeout, which starts here; that context also ends when the lease is
// lost, as does the fence, the parent of what the operation says after a failure or its
// deadline (its writes check the lease first: see session.guard), which ends Grace after the
// deadline. closeSession gives the lease back, within the grace.
func (o *operation) open(ctx, run context.Context, w WaitOptions) (work context.Context, closeSession func(), err error) {
	var closers []func()
	closeSession = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	work, cancelWork := context.WithCancelCause(run)
	closers = append(closers, func() { cancelWork(nil) })
	work, cancelDeadline := w.deadline(work)
	closers = append(closers, cancelDeadline)
	// The fence outlives the deadline by the operation's grace, for what is said after it (see
	// Grace), each part with a bound of its own (see session.graceContext); it ends with the
	// lease.
	dl, _ := work.Deadline()
	afterDeadline, cancelAfter := context.WithDeadline(context.WithoutCancel(ctx), dl.Add(Grace))
	closers = append(closers, cancelAfter)
	fence, lose := context.WithCancelCause(afterDeadline)
	closers = append(closers, func() { lose(nil) })
	stopAfter := context.AfterFunc(fence, func() { cancelWork(context.Cause(fence)) })
	closers = append(closers, func() { stopAfter() })
	lockCtx, lockCancel := w.deadline(ctx) // a signal stops waiting for the lease
	lease, err := o.lock(lockCtx, w.WaitForLock)
	lockCancel()
	if err != nil {
		closeSession()
		return nil, nil, err
	}
	o.lease, o.fence = lease, fence
	if lease == nil {
		return work, closeSession, nil
	}
	stopRenewing := lease.Keep(func(err error) { lose(err) })
	closers = append(closers, func() {
		stopRenewing()
		rctx, cancel := context.WithTimeout(afterDeadline, Grace)
		lease.Release(rctx)
		cancel()
	})
	// Under the lease no other operation of berth's writes the release's records: what the
	// operation listed stays true until it writes (and is forgotten before the lease goes).
	closers = append(closers, o.Store.RememberLists())
	return work, closeSession, nil
}

// lock acquires the release's lease, waiting for it with wait until ctx ends. Acquire watches a
// held lease until its holder shows it is live, so waiting is trying again at once.
func (o *operation) lock(ctx context.Context, wait bool) (*release.Lease, error) {
	name := o.name
	if o.Leases == nil {
		return nil, nil
	}
	for {
		l, err := o.Leases.Acquire(ctx, name, o.Holder)
		if apierrors.IsNotFound(err) {
			// The namespace does not exist (yet): there is no release to guard, and the operation
			// says so or creates the namespace (--create-namespace).
			return nil, nil
		}
		if o.terminating != nil && NamespaceTerminating(err) {
			// The namespace is being deleted: no lease can be created there, and nothing else can
			// be installed there to race with this operation.
			return nil, nil
		}
		var held *release.HeldError
		if !wait || !errors.As(err, &held) {
			return l, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("gave up waiting: %w", err) // err says why: ctx's cause
		}
	}
}
