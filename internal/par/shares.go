package par

import (
	"context"
	"slices"
	"sync"
)

// Shares lets at most limit holders run at once, and at most share of them of one key (a
// tenant, say): whoever waits takes turns by key, one key after another, first come first
// served within a key, so that one key's many waiters delay another key's one by at most one
// turn of each key with work, and one key never holds every slot while others wait.
type Shares struct {
	limit, share int

	mu      sync.Mutex
	running int
	byKey   map[string]int
	waiting map[string][]*shareWait
	// turns are the keys with waiters, in the order of their next turn.
	turns []string
}

type shareWait struct {
	ready   chan struct{}
	granted bool
}

// NewShares returns Shares of limit slots, at most share of them for one key (each at least
// one; a share above limit is limit).
func NewShares(limit, share int) *Shares {
	limit = max(limit, 1)
	return &Shares{limit: limit, share: min(max(share, 1), limit), byKey: map[string]int{}, waiting: map[string][]*shareWait{}}
}

// Acquire waits for a slot for key, in key's turn, and returns the function that gives it back
// (safe to call more than once); when ctx ends first, it returns ctx's cause and holds nothing.
func (s *Shares) Acquire(ctx context.Context, key string) (func(), error) {
	w := &shareWait{ready: make(chan struct{})}
	s.mu.Lock()
	if len(s.waiting[key]) == 0 {
		s.turns = append(s.turns, key)
	}
	s.waiting[key] = append(s.waiting[key], w)
	s.handOut()
	s.mu.Unlock()
	var once sync.Once
	release := func() { once.Do(func() { s.release(key) }) }
	select {
	case <-w.ready:
		return release, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	granted := w.granted
	if !granted {
		s.drop(key, w)
	}
	s.mu.Unlock()
	if granted {
		release()
	}
	return nil, context.Cause(ctx)
}

// Running is how many slots are held, and how many of them by key.
func (s *Shares) Running(key string) (all, ofKey int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running, s.byKey[key]
}

func (s *Shares) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	if s.byKey[key]--; s.byKey[key] <= 0 {
		delete(s.byKey, key)
	}
	s.handOut()
}

// handOut grants free slots to the first waiters in turn whose key is under its share; s.mu
// is held.
func (s *Shares) handOut() {
	for s.running < s.limit {
		i := slices.IndexFunc(s.turns, func(k string) bool { return s.byKey[k] < s.share })
		if i < 0 {
			return
		}
		key := s.turns[i]
		s.turns = slices.Delete(s.turns, i, i+1)
		list := s.waiting[key]
		w := list[0]
		if list = list[1:]; len(list) > 0 {
			s.waiting[key] = list
			s.turns = append(s.turns, key)
		} else {
			delete(s.waiting, key)
		}
		w.granted = true
		close(w.ready)
		s.running++
		s.byKey[key]++
	}
}

// drop takes w, which was not granted, out of key's waiters; s.mu is held.
func (s *Shares) drop(key string, w *shareWait) {
	list := slices.DeleteFunc(s.waiting[key], func(x *shareWait) bool { return x == w })
	if len(list) > 0 {
		s.waiting[key] = list
		return
	}
	delete(s.waiting, key)
	s.turns = slices.DeleteFunc(s.turns, func(k string) bool { return k == key })
}
