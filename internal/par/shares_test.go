package par

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// queued waits until n acquisitions wait in s.
func queued(s *Shares, n int) {
	for {
		s.mu.Lock()
		k := 0
		for _, l := range s.waiting {
			k += len(l)
		}
		s.mu.Unlock()
		if k == n {
			return
		}
		runtime.Gosched()
	}
}

// TestSharesKeepAShare: one key's many waiters hold at most its share; another key gets a slot
// at once beside them.
func TestSharesKeepAShare(t *testing.T) {
	s := NewShares(4, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 10 {
		go func() {
			release, err := s.Acquire(ctx, "a")
			if err == nil {
				defer release()
				<-ctx.Done() // held for the test's life
			}
		}()
	}
	queued(s, 8)
	if all, a := s.Running("a"); all != 2 || a != 2 {
		t.Fatalf("key a holds %d of %d slots, want 2 of 2", a, all)
	}
	release, err := s.Acquire(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if all, b := s.Running("b"); all != 3 || b != 1 {
		t.Errorf("key b holds %d of %d slots, want 1 of 3", b, all)
	}
}

// TestSharesTakeTurns: waiters are granted by key in turn, first come first served within a key.
func TestSharesTakeTurns(t *testing.T) {
	s := NewShares(1, 1)
	ctx := context.Background()
	hold, err := s.Acquire(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 4)
	for i, name := range []string{"a1", "a2", "a3", "b1"} {
		go func() {
			release, err := s.Acquire(ctx, name[:1])
			if err != nil {
				t.Error(err)
				return
			}
			order <- name
			release()
		}()
		queued(s, i+1)
	}
	hold()
	var got []string
	for range 4 {
		got = append(got, <-order)
	}
	want := []string{"a1", "b1", "a2", "a3"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("granted in order %v, want %v", got, want)
		}
	}
}

// TestSharesCanceledWaitHoldsNothing: an acquisition whose context ends while it waits returns
// the context's cause and holds no slot; releasing twice gives back one slot.
func TestSharesCanceledWaitHoldsNothing(t *testing.T) {
	s := NewShares(1, 1)
	hold, err := s.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("deadline of the Release")
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error)
	go func() {
		_, err := s.Acquire(ctx, "b")
		done <- err
	}()
	queued(s, 1)
	cancel(cause)
	if err := <-done; !errors.Is(err, cause) {
		t.Errorf("canceled wait: %v, want %v", err, cause)
	}
	hold()
	hold()
	if all, _ := s.Running("a"); all != 0 {
		t.Errorf("%d slots held once all were given back", all)
	}
	release, err := s.Acquire(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	release()
}
