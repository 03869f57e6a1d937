package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// Leases take a release's lease.
type Leases interface {
	// Acquire takes the lease, or says who holds it (a *release.HeldError); it may watch a held
	// lease, within ctx, to tell whether its holder is live (release.Leases.Acquire).
	Acquire(ctx context.Context, name string, me release.Holder) (*release.Lease, error)
	// Holder reads who holds the lease and whether it looks live; nil when nobody does.
	Holder(ctx context.Context, name string) (*release.Holder, bool, error)
}

// JournalStore keeps the journal of each release's operation under way. Writes are conditional
// on the version of the journal the writer last read or wrote ("" for none): a journal at another
// version is another operation's, and the write is refused (a *release.JournalChangedError).
type JournalStore interface {
	// Read returns the journal of a release and its version; nil and "" when there is none.
	Read(ctx context.Context, name string) (*release.Journal, string, error)
	// Put writes j over the journal at version and returns the version written.
	Put(ctx context.Context, j *release.Journal, version string) (string, error)
	// Delete deletes the journal at version.
	Delete(ctx context.Context, name, version string) error
	// Object is the object that holds the journal of release name, without the journal, which
	// the preflight matches webhooks against; nil for journals kept outside the cluster.
	Object(name string) *unstructured.Unstructured
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
// Deps.start): it holds the release's lease while fn runs (see hold), and deletes the operation's
// journal when fn ends, unless a signal (ctx ending) stopped it: the journal is then marked
// interrupted. fn runs with a context that a signal does
// not cancel: it stops at the next safe point instead (between steps), and waits are cut short.
// The operation's deadline (w.Timeout) starts here and bounds everything: waiting for the lease,
// finishing an interrupted operation first, and every step.
func (d *operation) operate(ctx context.Context, w WaitOptions, fn func(context.Context, *operation) error) error {
	name := d.name
	// The work goes on past a signal (it stops at a safe point instead), never past the
	// deadline: hold sets it on this context, whose own bound, a moment later, only backs it up.
	run, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.limit()+deadlineBackup)
	defer cancel()
	return d.hold(ctx, run, w, func(work context.Context, _ *operation) error {
		if d.Precondition != nil {
			if err := d.Precondition(work); err != nil {
				return err // nothing was done: no journal to end
			}
		}
		err := fn(work, d)
		if err != nil && d.stopped() {
			ie := &InterruptedError{Release: name, Operation: d.operation(), Err: err}
			return joinOnce(ie, d.interrupt(ctx))
		}
		return joinOnce(err, d.end(ctx, false))
	})
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

// Hold runs fn while it holds the lease of release name, as an operation does, for a change that
// is not one (drift correction): it takes the lease (waiting for it with w.WaitForLock), renews
// it while fn runs and gives it back at the end. fn's context ends at the deadline w.Timeout,
// which starts here, when ctx ends, or when the lease is lost (its cause is then a
// *release.LostError): fn must make no change once it has ended.
func Hold(ctx context.Context, d Deps, name string, w WaitOptions, fn func(context.Context) error) error {
	o := d.dryRun(name) // no journal: nothing to resume
	o.stop = ctx
	return o.hold(ctx, ctx, w, func(ctx context.Context, _ *operation) error { return fn(ctx) })
}

// hold runs fn as the operation on its release, holding the release's lease: it takes it
// (waiting until ctx or the deadline ends), renews it while fn runs and gives it back at the end.
// fn runs with the operation and a context made from run with the deadline w.Timeout, which
// starts here; that context also ends when the lease is lost, as does the fence, the parent of
// what the operation says after a failure or its deadline (its writes check the lease first: see
// operation.guard), which ends Grace after the deadline. The lease is given back within it.
func (d *operation) hold(ctx, run context.Context, w WaitOptions, fn func(context.Context, *operation) error) error {
	work, cancelWork := context.WithCancelCause(run)
	defer cancelWork(nil)
	work, cancelDeadline := w.deadline(work)
	defer cancelDeadline()
	// The fence outlives the deadline by the operation's grace, for what is said after it (see
	// Grace), each part with a bound of its own (see operation.graceContext); it ends with the
	// lease.
	dl, _ := work.Deadline()
	afterDeadline, cancelAfter := context.WithDeadline(context.WithoutCancel(ctx), dl.Add(Grace))
	defer cancelAfter()
	fence, lose := context.WithCancelCause(afterDeadline)
	defer lose(nil)
	defer context.AfterFunc(fence, func() { cancelWork(context.Cause(fence)) })()
	lockCtx, lockCancel := w.deadline(ctx) // a signal stops waiting for the lease
	lease, err := d.lock(lockCtx, w.WaitForLock)
	lockCancel()
	if err != nil {
		return err
	}
	d.lease, d.fence = lease, fence
	if lease != nil {
		stopRenewing := lease.Keep(func(err error) { lose(err) })
		defer func() {
			stopRenewing()
			rctx, cancel := context.WithTimeout(afterDeadline, Grace)
			lease.Release(rctx)
			cancel()
		}()
	}
	if lease != nil {
		// Under the lease no other operation of berth's writes the release's records: what the
		// operation listed stays true until it writes (and is forgotten before the lease goes).
		defer d.Store.RememberLists()()
	}
	return fn(work, d)
}

// lock acquires the release's lease, waiting for it with wait until ctx ends. Acquire watches a
// held lease until its holder shows it is live, so waiting is trying again at once.
func (d *operation) lock(ctx context.Context, wait bool) (*release.Lease, error) {
	name := d.name
	if d.Leases == nil {
		return nil, nil
	}
	for {
		l, err := d.Leases.Acquire(ctx, name, d.Holder)
		if apierrors.IsNotFound(err) {
			// The namespace does not exist (yet): there is no release to guard, and the operation
			// says so or creates the namespace (--create-namespace).
			return nil, nil
		}
		if d.terminating != nil && NamespaceTerminating(err) {
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

// interruptible cuts the cluster's waits short when stop ends (a signal): a wait changes nothing,
// so stopping it is safe; changes (apply, delete) run to their answer.
type interruptible struct {
	Cluster
	stop context.Context
}

func (c interruptible) with(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(c.stop, func() { cancel(ErrInterrupted) })
	return ctx, func() { unhook(); cancel(nil) }
}

func (c interruptible) WaitReady(ctx context.Context, ids []resource.Identity, opts readiness.Options, progress cluster.Progress) error {
	ctx, cancel := c.with(ctx)
	defer cancel()
	return c.Cluster.WaitReady(ctx, ids, opts, progress)
}

func (c interruptible) WaitAbsent(ctx context.Context, targets map[resource.Identity]types.UID, progress cluster.Progress) error {
	ctx, cancel := c.with(ctx)
	defer cancel()
	return c.Cluster.WaitAbsent(ctx, targets, progress)
}

func (c interruptible) RunHook(ctx context.Context, obj *unstructured.Unstructured, opts cluster.HookOptions) (cluster.HookRun, error) {
	ctx, cancel := c.with(ctx)
	defer cancel()
	return c.Cluster.RunHook(ctx, obj, opts)
}

func (c interruptible) WatchWindow(ctx context.Context, targets []resource.Identity, opts cluster.WindowOptions, progress cluster.Progress) error {
	ctx, cancel := c.with(ctx)
	defer cancel()
	return c.Cluster.WatchWindow(ctx, targets, opts, progress)
}

// LeftBehind reports whether an operation on release name left its lease or its journal behind:
// a process killed at its very end, after the last record was removed; or the incomplete record
// of its first revision: an install killed while it wrote that record. Uninstall takes them over
// and removes them, even when no record is left.
func LeftBehind(ctx context.Context, d Deps, name string) (bool, error) {
	if d.Store != nil {
		incomplete, err := incompleteAfter(ctx, d.Store, name, nil)
		if err != nil || incomplete != nil {
			return incomplete != nil, err
		}
	}
	if d.Journals != nil {
		j, _, err := d.Journals.Read(ctx, name)
		if err != nil || j != nil {
			return j != nil, err
		}
	}
	if d.Leases != nil {
		h, _, err := d.Leases.Holder(ctx, name)
		return h != nil, err
	}
	return false, nil
}
