package lifecycle

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/resource"
)

// lateCheck validates, by server-side dry run, the objects whose kinds the release's own CRDs
// define. They cannot be validated with the rest before anything changes, as their kinds do not
// exist yet; they are as soon as the CRDs are Established, while the steps in between go on, and
// none of them is applied before its check passed. (The check also has the API server ready each
// new kind's handler early: the first request of a kind is slow, and they are served one at a time.)
type lateCheck struct {
	c       Cluster
	pending []*unstructured.Unstructured
	ids     map[resource.Identity]bool
	started bool
	done    chan error
}

func newLateCheck(c Cluster, p *prepared) *lateCheck {
	k := &lateCheck{c: c, ids: map[resource.Identity]bool{}}
	if p == nil {
		return k
	}
	for _, obj := range p.objects {
		if p.pendingKinds[obj.GroupVersionKind().GroupKind()] {
			k.pending = append(k.pending, obj)
			k.ids[resource.IdentityOf(obj)] = true
		}
	}
	return k
}

// after starts the check once a step that made CRDs Established is done.
func (k *lateCheck) after(ctx context.Context, step plan.Step) {
	if k.started || len(k.pending) == 0 || step.Action != plan.WaitReady || !resource.OnlyCRDs(step.Objects) {
		return
	}
	k.started = true
	k.done = make(chan error, 1)
	go func() {
		k.done <- forEach(ctx, k.pending, func(ctx context.Context, obj *unstructured.Unstructured) error {
			_, err := k.c.Apply(ctx, obj, cluster.ApplyOptions{DryRun: true})
			if cluster.IsUnknownKind(err) {
				return nil // defined by a CRD not installed yet: its apply will say so
			}
			return err
		})
	}()
}

// before waits for the check when step applies objects it covers.
func (k *lateCheck) before(ctx context.Context, step plan.Step) error {
	if !k.started || k.done == nil || step.Action != plan.Apply ||
		!slices.ContainsFunc(step.Objects, func(id resource.Identity) bool { return k.ids[id] }) {
		return nil
	}
	var err error
	select {
	case err = <-k.done:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	k.done = nil
	if err != nil {
		return fmt.Errorf("validation of the custom resources failed, none of them was applied:\n%w", err)
	}
	return nil
}
