package cluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/resource"
)

// DeleteOptions change how an object is deleted.
type DeleteOptions struct {
	// Propagation is how dependents go: Foreground (the default) keeps the object until its
	// dependents are gone, Background deletes it at once and its dependents after, Orphan leaves
	// them.
	Propagation metav1.DeletionPropagation
	DryRun      bool
}

// DeleteResult says what a delete did.
type DeleteResult string

const (
	// Deleted: the API server accepted the deletion (the object may still be finalizing).
	Deleted DeleteResult = "deleted"
	// AlreadyGone: there was no such object, or only another object (another UID) by that name.
	AlreadyGone DeleteResult = "already gone"
)

// Delete deletes the object named by id if it still has uid (any object by that name when uid is
// empty): an object recreated under the same name by someone else is never deleted by mistake.
func (c *Client) Delete(ctx context.Context, id resource.Identity, uid types.UID, opts DeleteOptions) (DeleteResult, error) {
	ri, _, err := c.resourceFor(id, "")
	if err != nil {
		return "", fmt.Errorf("%s: %w", id, err)
	}
	prop := opts.Propagation
	if prop == "" {
		prop = metav1.DeletePropagationForeground
	}
	o := metav1.DeleteOptions{PropagationPolicy: &prop}
	if uid != "" {
		o.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	if opts.DryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	err = ri.Delete(ctx, id.Name, o)
	switch {
	case err == nil:
		return Deleted, nil
	case apierrors.IsNotFound(err):
		return AlreadyGone, nil
	case apierrors.IsConflict(err) && uid != "":
		// The UID precondition failed: the name now belongs to another object.
		return AlreadyGone, nil
	default:
		return "", fmt.Errorf("%s: delete: %w", id, err)
	}
}
