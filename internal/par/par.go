// Package par runs work concurrently with a bound on how much runs at once. It depends on
// nothing of berth's, so every package may use it.
package par

import (
	"context"
	"sync"
)

// Each calls fn for every item, at most limit calls at once (one when limit is below one), and
// returns once every call it started returned. errs[i] is what the call for items[i] returned.
// Once ctx ends, items not yet started are not started: their error is ctx's cause. Each call
// gets ctx itself; fn decides what its own error means.
func Each[T any](ctx context.Context, items []T, limit int, fn func(context.Context, T) error) []error {
	errs := make([]error, len(items))
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i, item := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			for j := i; j < len(items); j++ {
				errs[j] = context.Cause(ctx)
			}
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(ctx, item)
		})
	}
	wg.Wait()
	return errs
}
