package par

import (
	"context"
	"errors"
	"testing"
)

// TestSlotsHoldAtMostTheirNumber: two slots are held, so a third Acquire waits until its context
// ends, with the context's cause and nothing held; once one is given back (twice, which gives
// back one), the next is had at once.
func TestSlotsHoldAtMostTheirNumber(t *testing.T) {
	s := NewSlots(2)
	first, err := s.Acquire(context.Background())
	if err != nil {
		t.Fatalf("first slot: %v", err)
	}
	second := s.Hold()
	defer second()

	stop := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(stop)
	if release, err := s.Acquire(ctx); !errors.Is(err, stop) || release != nil {
		t.Fatalf("third slot of two: release %v, error %v; want none and the context's cause", release != nil, err)
	}

	first()
	first()
	third, err := s.Acquire(context.Background())
	if err != nil {
		t.Fatalf("slot given back: %v", err)
	}
	defer third()
	if release, err := s.Acquire(ctx); err == nil {
		release()
		t.Fatal("a second giving back of one slot freed two")
	}
}

// TestSlotsAtLeastOne: a number below one is one slot, not none.
func TestSlotsAtLeastOne(t *testing.T) {
	s := NewSlots(0)
	release, err := s.Acquire(context.Background())
	if err != nil {
		t.Fatalf("the one slot: %v", err)
	}
	release()
}
