package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

func (d Deps) engineOptions(p *prepared, before map[resource.Identity]*unstructured.Unstructured,
	recordedUIDs map[resource.Identity]types.UID, w WaitOptions) engine.Options {
	o := engine.DefaultOptions()
	if p != nil {
		o.Objects = p.byID
	}
	o.Before = before
	o.UIDs = recordedUIDs
	o.Readiness = readiness.Options{WaitForJobs: w.WaitForJobs}
	o.Events = d.Events
	return o
}

// fail records rel as failed with the cause and, when asked, undoes the operation.
func (d Deps) fail(ctx context.Context, rel *release.Release, what string, cause error, undo bool, undoFn func(context.Context) error) error {
	// The record must be written even when the operation ran out of time.
	if d.op.stopped() {
		// Stopped by a signal: the revision stays pending, and its journal says how far it got.
		return fmt.Errorf("%s: %w", what, cause)
	}
	wctx := context.WithoutCancel(ctx)
	rel.Info.Status = release.StatusFailed
	rel.Info.Description = fmt.Sprintf("%s: %v", what, cause)
	rel.Info.LastDeployed = d.now()
	errs := []error{fmt.Errorf("%s: %w", what, cause)}
	if err := d.Store.Update(wctx, rel); err != nil {
		errs = append(errs, fmt.Errorf("record release %s revision %d as failed: %w", rel.Name, rel.Version, err))
	}
	if undo {
		if err := undoFn(wctx); err != nil {
			errs = append(errs, fmt.Errorf("--rollback-on-failure: %w", err))
		} else {
			errs = append(errs, errors.New("--rollback-on-failure: the failed revision was rolled back"))
		}
	}
	return errors.Join(errs...)
}

// union returns the objects of a and b, each identity once (a's copy first).
func union(a, b []*unstructured.Unstructured) []*unstructured.Unstructured {
	seen := map[resource.Identity]bool{}
	var out []*unstructured.Unstructured
	for _, obj := range append(append([]*unstructured.Unstructured{}, a...), b...) {
		id := resource.IdentityOf(obj)
		if !seen[id] {
			seen[id] = true
			out = append(out, obj)
		}
	}
	return out
}
