package cluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/resource"
)

// ApplyOptions change how an object is applied.
type ApplyOptions struct {
	// DryRun runs the apply through the API server's admission and validation without persisting.
	DryRun bool
}

// Apply server-side applies obj (already normalized) with FieldManager, taking over fields
// other managers own: ownership was settled before (see Ownership). It returns the object as
// stored.
func (c *Client) Apply(ctx context.Context, obj *unstructured.Unstructured, opts ApplyOptions) (*unstructured.Unstructured, error) {
	id := resource.IdentityOf(obj)
	ri, _, err := c.resourceFor(id, obj.GroupVersionKind().Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	o := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	if opts.DryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	out, err := ri.Apply(ctx, obj.GetName(), obj, o)
	if err != nil {
		return nil, fmt.Errorf("%s: apply: %w", id, err)
	}
	return out, nil
}

// Get returns the live object named by id, or nil when there is none.
func (c *Client) Get(ctx context.Context, id resource.Identity) (*unstructured.Unstructured, error) {
	return c.GetVersion(ctx, id, "")
}

// GetVersion returns the live object named by id as API version version of its group serves it
// (empty: the preferred version), or nil when there is none.
func (c *Client) GetVersion(ctx context.Context, id resource.Identity, version string) (*unstructured.Unstructured, error) {
	ri, _, err := c.resourceFor(id, version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	out, err := ri.Get(ctx, id.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: get: %w", id, err)
	}
	return out, nil
}
