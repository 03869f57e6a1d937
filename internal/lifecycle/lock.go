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
	Acquire(ctx context.Context, name string, me release.Holder) (*release.Lease, error)
	// Holder reads who holds the lease and whether it is live; nil when nobody does.
	Holder(ctx context.Context, name string) (*release.Holder, bool, error)
}

// JournalStore keeps the journal of each release's operation under way.
type JournalStore interface {
	// Get returns the journal of a release; nil when there is none.
	Get(ctx context.Context, name string) (*release.Journal, error)
	Put(ctx context.Context, j *release.Journal) error
	Delete(ctx context.Context, name string) error
}

// lockPoll is how often a held lease is tried again with --wait-for-lock.
const lockPoll = time.Second

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

// operate runs fn as one operation on release name: it holds the release's lease while fn runs,
// renewing it, and gives it back at the end; it deletes the operation's journal when fn ends,
// unless a signal (ctx ending) stopped it: the journal is then marked interrupted. fn runs with a
// context that a signal does not cancel: it stops at the next safe point instead (between steps),
// and waits are cut short. The operation's deadline (w.Timeout) starts here and bounds everything:
// waiting for the lease, finishing an interrupted operation first, and every step.
func (d Deps) operate(ctx context.Context, name string, w WaitOptions, fn func(context.Context, Deps) error) error {
	stop := ctx
	deadlined, cancelDeadline := w.deadline(context.WithoutCancel(ctx))
	defer cancelDeadline()
	work, cancel := context.WithCancelCause(deadlined)
	defer cancel(nil)
	lockCtx, lockCancel := w.deadline(ctx) // a signal stops waiting for the lease
	lease, err := d.lock(lockCtx, name, w.WaitForLock)
	lockCancel()
	if err != nil {
		return err
	}
	o := &operation{name: name, journals: d.Journals, written: d.JournalWritten, stop: stop, holder: d.Holder, now: d.now,
		noJournalInTerminating: d.terminating != nil}
	if lease != nil {
		stopRenewing := lease.Keep(func(err error) {
			cancel(fmt.Errorf("lost the lease of release %s (another process took it over): %w", name, err))
		})
		defer func() {
			stopRenewing()
			lease.Release(context.WithoutCancel(ctx))
		}()
	}
	d.op = o
	d.Cluster = interruptible{Cluster: d.Cluster, stop: stop}
	err = fn(work, d)
	wctx := context.WithoutCancel(ctx)
	if err != nil && o.stopped() {
		ie := &InterruptedError{Release: name, Operation: o.operation(), Err: err}
		return errors.Join(ie, o.interrupt(wctx))
	}
	return errors.Join(err, o.end(wctx, false))
}

// lock acquires the release's lease, waiting for it with wait until ctx ends.
func (d Deps) lock(ctx context.Context, name string, wait bool) (*release.Lease, error) {
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
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w; gave up waiting: %w", err, context.Cause(ctx))
		case <-time.After(lockPoll):
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

// LeftBehind reports whether an operation on release name left its lease or its journal behind:
// a process killed at its very end, after the last record was removed. Uninstall takes both
// over and removes them, even when no record is left.
func LeftBehind(ctx context.Context, d Deps, name string) (bool, error) {
	if d.Journals != nil {
		j, err := d.Journals.Get(ctx, name)
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
