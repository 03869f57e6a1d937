package lifecycle_test

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/resource"
)

// LiveObjects returns the fake's objects of objs that exist, whole.
func (c *fakeCluster) LiveObjects(ctx context.Context, objs []*unstructured.Unstructured) (map[resource.Identity]*unstructured.Unstructured, error) {
	ids := make([]resource.Identity, len(objs))
	for i, obj := range objs {
		ids[i] = resource.IdentityOf(obj)
	}
	return c.Live(ctx, ids)
}
