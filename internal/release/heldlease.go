package release

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Lease is a release's lease while this process holds it.
type Lease struct {
	leases *Leases
	name   string
	mu     sync.Mutex
	obj    *coordinationv1.Lease
	// lost is set once the lease is known to be another's (a *LostError).
	lost error
	// confirmed is when the request that last acquired or renewed the lease was sent, by
	// this process's clock.
	confirmed time.Time
}

// ErrLost is what an operation meets once another operation owns its release: errors.Is(err,
// ErrLost) holds for a *LostError and a *JournalChangedError.
var ErrLost = errors.New("another operation owns the release now")

// LostError says that an operation's lease was taken over by another or deleted: the operation
// stops, and writes nothing more.
type LostError struct {
	Release, Namespace string
	// Holder is who holds the lease now; nil when nobody does (it was deleted).
	Holder *Holder
	Err    error
}

func (e *LostError) Error() string {
	how := "deleted"
	if e.Holder != nil {
		how = "taken over by " + e.Holder.String()
	}
	return fmt.Sprintf("lost the lease of release %q in namespace %q (Lease/%s/%s was %s): stopped, writing nothing more",
		e.Release, e.Namespace, e.Namespace, LeaseKey(e.Release), how)
}

func (e *LostError) Is(target error) bool { return target == ErrLost }
func (e *LostError) Unwrap() error        { return e.Err }

// Renew extends the lease, and so confirms with the API server that it is still this holder's:
// a *LostError when another took it over or it was deleted. A Lease changed by someone else that
// still names this holder (its annotations edited) is renewed as it is now.
func (l *Lease) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.lost != nil:
		return l.lost
	case l.obj == nil:
		return fmt.Errorf("Lease/%s/%s: renew: already released", l.leases.namespace, LeaseKey(l.name))
	}
	for range 2 {
		obj := l.obj.DeepCopy()
		sent := l.leases.clock().Now()
		now := metav1.NewMicroTime(sent)
		obj.Spec.RenewTime = &now
		updated, err := l.leases.client.Leases(l.leases.namespace).Update(ctx, obj, metav1.UpdateOptions{})
		if err == nil {
			l.obj, l.confirmed = updated, sent
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("Lease/%s/%s: renew: %w", l.leases.namespace, LeaseKey(l.name), err)
		}
		if err := l.reread(ctx, err); err != nil {
			return err
		}
	}
	return fmt.Errorf("Lease/%s/%s: renew: changed under every attempt", l.leases.namespace, LeaseKey(l.name))
}

// Confirm confirms that the lease is still this holder's before a write that an operation taking
// the release over would go by (a record, a journal's end): it renews the lease (Renew), unless
// the request that last acquired or renewed it was sent less than a sixth of the lease's
// duration ago. Then no other holder can have it: another takes a lease over only once it saw
// it unchanged for a whole duration (Leases.Acquire), counted from after that request was
// written, so the lease stays this holder's for five sixths of a duration more, far longer than
// a write takes, as it does after a renewal. A lease known lost (by Keep's renewals) is its
// *LostError, without a request.
func (l *Lease) Confirm(ctx context.Context) error {
	l.mu.Lock()
	recent := l.lost == nil && l.obj != nil && !l.confirmed.IsZero() &&
		l.leases.clock().Since(l.confirmed) < l.leases.duration()/6
	l.mu.Unlock()
	if recent {
		return nil
	}
	return l.Renew(ctx)
}

// reread reads the Lease after a renewal met cause (a conflict, or the Lease gone): when it still
// names this holder, it is renewed as it is now; otherwise the lease is lost (a *LostError).
func (l *Lease) reread(ctx context.Context, cause error) error {
	lost := &LostError{Release: l.name, Namespace: l.leases.namespace, Err: cause}
	if apierrors.IsNotFound(cause) {
		l.lost = lost
		return lost
	}
	cur, err := l.leases.client.Leases(l.leases.namespace).Get(ctx, l.obj.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l.lost = lost
		return lost
	}
	if err != nil {
		return fmt.Errorf("Lease/%s/%s: renew: %w; read it again: %w", l.leases.namespace, l.obj.Name, cause, err)
	}
	if h := holderOf(cur); h.Identity != *l.obj.Spec.HolderIdentity {
		lost.Holder = &h
		l.lost = lost
		return lost
	}
	l.obj = cur
	return nil
}

// Keep renews the lease every third of its duration until stop is called (once or more). When a
// renewal finds the lease lost (taken over or deleted: a *LostError), or renewals failed for a
// whole lease duration by this process's clock (others may have judged it expired by then), lost
// is called once.
func (l *Lease) Keep(lost func(error)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		d := l.leases.duration()
		c := l.leases.clock()
		t := c.NewTicker(d / 3)
		defer t.Stop()
		last := c.Now()
		for {
			select {
			case <-done:
				return
			case <-t.C():
			}
			ctx, cancel := context.WithTimeout(context.Background(), d/3)
			err := l.Renew(ctx)
			cancel()
			switch {
			case err == nil:
				last = c.Now()
			case errors.Is(err, ErrLost):
				lost(err)
				return
			case c.Now().Sub(last) >= d:
				lost(fmt.Errorf("Lease/%s/%s: not renewed for %s: %w", l.leases.namespace, LeaseKey(l.name), d, err))
				return
			}
		}
	})
	return sync.OnceFunc(func() { close(done); wg.Wait() })
}

// Release gives the lease back by deleting the Lease, provided it is still this holder's: a lease
// known lost is left to its new holder.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.obj == nil || l.lost != nil {
		l.obj = nil
		return nil
	}
	obj := l.obj
	l.obj = nil
	err := l.leases.client.Leases(l.leases.namespace).Delete(ctx, obj.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &obj.UID, ResourceVersion: &obj.ResourceVersion}})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // released, or no longer ours
	}
	return fmt.Errorf("Lease/%s/%s: release: %w", l.leases.namespace, obj.Name, err)
}
