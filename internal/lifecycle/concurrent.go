package lifecycle

import (
	"context"
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/engine"
)

// forEach runs fn for every object, as many at once as the engine applies, and joins their errors
// in the objects' order, so that a message lists them the same way every time.
func forEach(ctx context.Context, objs []*unstructured.Unstructured, fn func(context.Context, *unstructured.Unstructured) error) error {
	errs := make([]error, len(objs))
	sem := make(chan struct{}, engine.DefaultOptions().Concurrency)
	var wg sync.WaitGroup
	for i, obj := range objs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(ctx, obj)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
