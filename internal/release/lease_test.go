package release

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berthdev/berth/internal/testenv"
)

// skewed is the clock of a host whose clock is off by by.
type skewed struct {
	clock.RealClock
	by time.Duration
}

func (c skewed) Now() time.Time { return time.Now().Add(c.by) }

// shortLeases are the leases of env's namespace, lasting d and read again every poll while
// watched.
func shortLeases(env *testenv.Env, d, poll time.Duration) *Leases {
	s := NewLeases(env.Client.CoordinationV1(), env.Namespace)
	s.Duration, s.Poll = d, poll
	return s
}

func TestLeaseRace(t *testing.T) {
	env := testenv.New(t)
	const racers = 8
	var wg sync.WaitGroup
	won := make(chan *Lease, racers)
	held := make(chan *HeldError, racers)
	for range racers {
		wg.Go(func() {
			me := Self("berth upgrade web")
			me.Who = "deployer@ci"
			l, err := shortLeases(env, 3*time.Second, 50*time.Millisecond).Acquire(t.Context(), "web", me)
			var he *HeldError
			switch {
			case err == nil:
				// The winner renews its lease, as an operation does: the others see it live.
				stop := l.Keep(func(err error) { t.Errorf("the winner lost its lease: %v", err) })
				t.Cleanup(stop)
				won <- l
			case errors.As(err, &he):
				held <- he
			default:
				t.Errorf("acquire: %v", err)
			}
		})
	}
	wg.Wait()
	close(won)
	close(held)
	if len(won) != 1 || len(held) != racers-1 {
		t.Fatalf("%d acquisitions won and %d were refused, want 1 and %d", len(won), len(held), racers-1)
	}
	he := <-held
	if he.Holder.Command != "berth upgrade web" || he.Holder.Who != "deployer@ci" || he.Holder.Since.IsZero() {
		t.Errorf("the refusal names holder %+v, want who, the command and since when", he.Holder)
	}
	l := <-won
	if err := l.Renew(t.Context()); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("release: %v", err)
	}
	if h, _, err := NewLeases(env.Client.CoordinationV1(), env.Namespace).Holder(t.Context(), "web"); err != nil || h != nil {
		t.Errorf("after release: holder %+v, %v; want none", h, err)
	}
}

func TestLeaseTakeover(t *testing.T) {
	tests := []struct {
		name string
		// first is the holder whose lease is taken over, and never renewed.
		first Holder
	}{
		{name: "not renewed while watched", first: Holder{Host: "elsewhere", PID: 1, Command: "berth install web"}},
		{name: "holder process gone", first: Holder{PID: 1 << 30, Command: "berth install web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testenv.New(t)
			first := shortLeases(env, time.Second, 50*time.Millisecond)
			if tt.first.Host == "" {
				tt.first.Host = first.Host
			}
			old, err := first.Acquire(t.Context(), "web", tt.first)
			if err != nil {
				t.Fatal(err)
			}
			second := shortLeases(env, time.Minute, 50*time.Millisecond)
			if _, err := second.Acquire(t.Context(), "web", Self("berth upgrade web")); err != nil {
				t.Fatalf("take over: %v", err)
			}
			var lost *LostError
			if err := old.Renew(t.Context()); !errors.As(err, &lost) || lost.Holder == nil || lost.Holder.Command != "berth upgrade web" {
				t.Errorf("the old holder's renewal of a lease taken over from it: %v, want a *LostError naming the new holder", err)
			}
			h, live, err := second.Holder(t.Context(), "web")
			if err != nil || h.Command != "berth upgrade web" || !live {
				t.Errorf("holder %+v live %v (%v), want the new holder", h, live, err)
			}
		})
	}
}

// TestLeaseExpiryUnderClockSkew: whether another's lease expired is judged by what the watcher
// sees, timed by its own clock (here a fake one the test steps): the holder's clock, two
// minutes behind or ahead, changes nothing. A lease renewed while watched is live; one not
// renewed for a lease duration of watching is taken over, and not a poll sooner.
func TestLeaseExpiryUnderClockSkew(t *testing.T) {
	const duration, poll = 30 * time.Second, time.Second
	for _, skew := range []time.Duration{-2 * time.Minute, 2 * time.Minute} {
		for _, renewed := range []bool{true, false} {
			name := "holder clock " + skew.String()
			if renewed {
				name += ", renewed"
			} else {
				name += ", not renewed"
			}
			t.Run(name, func(t *testing.T) {
				env := testenv.New(t)
				holders := shortLeases(env, duration, poll)
				holders.Clock = skewed{by: skew}
				held, err := holders.Acquire(t.Context(), "web", Holder{Host: "elsewhere", PID: 1, Command: "berth upgrade web"})
				if err != nil {
					t.Fatal(err)
				}
				fc := testingclock.NewFakeClock(time.Now())
				watcher := shortLeases(env, duration, poll)
				watcher.Clock = fc
				w := watch(t, watcher)
				for waited := time.Duration(0); waited < duration; waited += poll {
					if w.next(t, fc) && !renewed {
						t.Fatalf("acquire ended after %s of watching a lease not renewed: %v", waited, w.err)
					}
					if renewed && waited == 10*time.Second {
						if err := held.Renew(t.Context()); err != nil {
							t.Fatal(err)
						}
					}
					fc.Step(poll)
				}
				l, err := w.outcome(t)
				var he *HeldError
				switch {
				case renewed && !errors.As(err, &he):
					t.Errorf("a lease renewed while watched: acquire returned %v, want a *HeldError", err)
				case !renewed && err != nil:
					t.Errorf("a lease not renewed for %s of watching: %v, want it taken over", duration, err)
				case !renewed:
					if h, _, err := watcher.Holder(t.Context(), "web"); err != nil || h.Identity != *l.obj.Spec.HolderIdentity {
						t.Errorf("after the takeover the Lease names %+v (%v), want the watcher", h, err)
					}
				}
			})
		}
	}
}

// watching is an Acquire under way in the background.
type watching struct {
	done chan struct{}
	l    *Lease
	err  error
}

// watch starts an Acquire of release web with s.
func watch(t *testing.T, s *Leases) *watching {
	w := &watching{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.l, w.err = s.Acquire(t.Context(), "web", Self("berth upgrade web"))
	}()
	return w
}

// next waits until the Acquire waits for fc to move on, or has ended; it reports whether it has.
func (w *watching) next(t *testing.T, fc *testingclock.FakeClock) (ended bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-w.done:
			return true, nil
		default:
			return fc.HasWaiters(), nil
		}
	})
	if err != nil {
		t.Fatalf("acquire neither waits nor ended: %v", err)
	}
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// outcome waits until the Acquire has ended and returns what it returned; it must not have ended
// before the last step of the clock.
func (w *watching) outcome(t *testing.T) (*Lease, error) {
	t.Helper()
	select {
	case <-w.done:
		return w.l, w.err
	case <-t.Context().Done():
		t.Fatal("acquire did not end")
	}
	return nil, nil
}

// TestObservationIgnoresTheHoldersClock: the verdict on a lease depends on when the watcher saw
// its record change, by the watcher's clock, never on the renewTime the holder wrote.
func TestObservationIgnoresTheHoldersClock(t *testing.T) {
	const d = 30 * time.Second
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	lease := func(version string, renewed time.Time) *coordinationv1.Lease {
		id, seconds, at := "other", int32(d/time.Second), metav1.NewMicroTime(renewed)
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{ResourceVersion: version},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &seconds, RenewTime: &at}}
	}
	for _, skew := range []time.Duration{-2 * time.Minute, 0, 2 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			var o observation
			holderNow := start.Add(skew)
			if o.see(lease("1", holderNow), start) {
				t.Fatal("the first read is a change")
			}
			if o.expired(start, d) || o.expired(start.Add(d-time.Nanosecond), d) {
				t.Error("expired before a lease duration of watching")
			}
			// Read again unchanged: the watch goes on from the first read.
			if o.see(lease("1", holderNow), start.Add(10*time.Second)) {
				t.Error("an unchanged read is a change")
			}
			// Renewed 20 s in: live, and watched anew from then.
			if !o.see(lease("2", holderNow.Add(20*time.Second)), start.Add(20*time.Second)) {
				t.Error("a renewal is not a change")
			}
			if o.expired(start.Add(d), d) || o.expired(start.Add(20*time.Second+d-time.Nanosecond), d) {
				t.Error("expired less than a lease duration after it was seen renewed")
			}
			if !o.expired(start.Add(20*time.Second+d), d) {
				t.Error("not expired a lease duration after it was last seen renewed")
			}
		})
	}
}

// TestLeaseReleasedWhileWatched: a holder that gives its lease back while another process
// watches it, before it renewed it, was live: the watcher is refused, naming it, and does not
// take the lease it found free on its next look.
func TestLeaseReleasedWhileWatched(t *testing.T) {
	env := testenv.New(t)
	first := shortLeases(env, time.Minute, 50*time.Millisecond)
	held, err := first.Acquire(t.Context(), "web", Self("berth upgrade web"))
	if err != nil {
		t.Fatal(err)
	}
	watching := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		second := shortLeases(env, time.Minute, 50*time.Millisecond)
		second.Clock = &notifyingClock{WithTicker: clock.RealClock{}, after: watching}
		l, err := second.Acquire(t.Context(), "web", Self("berth upgrade web --set x=2"))
		if err == nil {
			err = errors.New("took the lease")
			_ = l.Release(context.Background())
		}
		done <- err
	}()
	<-watching // the second process read the lease, and waits to read it again
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	var he *HeldError
	if err := <-done; !errors.As(err, &he) || he.Holder.Command != "berth upgrade web" {
		t.Errorf("acquire of a lease released while watched: %v, want a *HeldError naming its holder", err)
	}
}

// notifyingClock is a clock that closes after the first time it is asked to wait.
type notifyingClock struct {
	clock.WithTicker
	once  sync.Once
	after chan struct{}
}

func (c *notifyingClock) After(d time.Duration) <-chan time.Time {
	c.once.Do(func() { close(c.after) })
	return c.WithTicker.After(d)
}
