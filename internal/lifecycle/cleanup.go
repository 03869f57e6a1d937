package lifecycle

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// toCreate returns the desired objects that do not exist before the operation (before): those it
// creates, which a cleanup on failure deletes. Never nil, so that a cleanup with nothing to
// delete still says it was done.
func toCreate(desired []*unstructured.Unstructured, before map[resource.Identity]*unstructured.Unstructured) []*unstructured.Unstructured {
	out := []*unstructured.Unstructured{}
	for _, obj := range desired {
		if before[resource.IdentityOf(obj)] == nil {
			out = append(out, obj)
		}
	}
	return out
}

// cleanup deletes, as a plan of its own (plan.Cleanup), the objects of created that the failed
// operation that recorded rel did create: those that exist now and are the release's own by
// Helm's metadata. Each is deleted by the UID it has now and waited for until gone.
func (d *operation) cleanup(ctx context.Context, rel *release.Release, created []*unstructured.Unstructured) error {
	now, err := live(ctx, d.Cluster, created)
	if err != nil {
		return err
	}
	var own []*unstructured.Unstructured
	for _, obj := range created {
		l := now[resource.IdentityOf(obj)]
		if l == nil {
			continue
		}
		if name, ns, ok := resource.OwnedBy(l); ok && name == rel.Name && ns == rel.Namespace {
			own = append(own, obj)
		}
	}
	pl := plan.Cleanup(own, now)
	if len(pl.Steps) == 0 {
		return nil
	}
	op := d.operation()
	if pl, err = d.begin(ctx, op, rel.Version, pl, d.options()); err != nil {
		return err
	}
	_, err = d.execute(ctx, op, rel.Version, pl, &runner{d: d, rel: rel}, d.engineOptions(nil, nil, WaitOptions{}))
	return err
}

// failedApplying says whether err is the failure of a step that applies objects.
func failedApplying(err error) bool {
	var se *engine.StepError
	return errors.As(err, &se) && se.Action == plan.Apply
}
