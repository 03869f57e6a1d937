package lifecycle

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/par"
)

// forEach runs fn for every object, as many at once as the engine applies, and joins their errors
// in the objects' order, so that a message lists them the same way every time.
func forEach(ctx context.Context, objs []*unstructured.Unstructured, fn func(context.Context, *unstructured.Unstructured) error) error {
	return errors.Join(par.Each(ctx, objs, engine.DefaultConcurrency, fn)...)
}
