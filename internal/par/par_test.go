package par

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestEachRespectsItsLimit runs 20 calls at most 3 at once: the first 3 wait until all 3 run (so
// the limit is reached), and no call ever sees more than 3 running.
func TestEachRespectsItsLimit(t *testing.T) {
	const limit = 3
	var running, most atomic.Int32
	var first sync.WaitGroup
	first.Add(limit)
	items := make([]int, 20)
	for i := range items {
		items[i] = i
	}
	errs := Each(context.Background(), items, limit, func(_ context.Context, i int) error {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		if i < limit {
			first.Done()
			first.Wait()
		}
		return nil
	})
	if got := most.Load(); got != limit {
		t.Errorf("at most %d calls ran at once, want %d", got, limit)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("item %d: %v", i, err)
		}
	}
}

// TestEachReturnsErrorsInItemOrder: each call's error is at its item's index, whatever order the
// calls end in.
func TestEachReturnsErrorsInItemOrder(t *testing.T) {
	items := []int{0, 1, 2, 3, 4, 5}
	// Each call ends after the one of the next item: the calls end in reverse order.
	done := make([]chan struct{}, len(items)+1)
	for i := range done {
		done[i] = make(chan struct{})
	}
	close(done[len(items)])
	errs := Each(context.Background(), items, len(items), func(_ context.Context, i int) error {
		<-done[i+1]
		defer close(done[i])
		if i%2 == 1 {
			return fmt.Errorf("item %d", i)
		}
		return nil
	})
	if len(errs) != len(items) {
		t.Fatalf("%d errors for %d items", len(errs), len(items))
	}
	for i, err := range errs {
		want := ""
		if i%2 == 1 {
			want = fmt.Sprintf("item %d", i)
		}
		if got := fmt.Sprint(err); (err == nil) != (want == "") || (err != nil && got != want) {
			t.Errorf("errs[%d] = %v, want %q", i, err, want)
		}
	}
	if errs := Each(context.Background(), []int(nil), 4, func(context.Context, int) error { return errors.New("called") }); len(errs) != 0 {
		t.Errorf("no items gave errors %v", errs)
	}
}

// TestEachStopsStartingOnceItsContextEnds: one call at a time; the first cancels the context, so
// no other call starts and each of the others has the context's cause as its error.
func TestEachStopsStartingOnceItsContextEnds(t *testing.T) {
	stop := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var calls atomic.Int32
	errs := Each(ctx, []string{"a", "b", "c", "d"}, 1, func(ctx context.Context, s string) error {
		calls.Add(1)
		cancel(stop)
		<-ctx.Done()
		return fmt.Errorf("%s: %w", s, context.Cause(ctx))
	})
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
	if got := fmt.Sprint(errs[0]); got != "a: stopped" {
		t.Errorf("errs[0] = %q, want the call's own error", got)
	}
	for i, err := range errs[1:] {
		if !errors.Is(err, stop) {
			t.Errorf("errs[%d] = %v, want the context's cause", i+1, err)
		}
	}
}
