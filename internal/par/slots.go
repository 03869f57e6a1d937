package par

import (
	"context"
	"sync"
)

// Slots lets at most a number of holders run at once, first come first served as Go's channels
// serve: a counting semaphore for work that is not a loop over items (Each is that).
type Slots struct {
	c chan struct{}
}

// NewSlots returns n slots (one when n is below one).
func NewSlots(n int) *Slots {
	return &Slots{c: make(chan struct{}, max(n, 1))}
}

// Acquire waits for a slot and returns the function that gives it back (safe to call more than
// once); when ctx ends first, it returns ctx's cause and holds nothing.
func (s *Slots) Acquire(ctx context.Context) (func(), error) {
	select {
	case s.c <- struct{}{}:
		return s.giveBack(), nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Hold waits for a slot however long it takes, for a caller with no context to end the wait,
// and returns the function that gives it back (safe to call more than once).
func (s *Slots) Hold() func() {
	s.c <- struct{}{}
	return s.giveBack()
}

func (s *Slots) giveBack() func() {
	var once sync.Once
	return func() { once.Do(func() { <-s.c }) }
}
