package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

// Progress is told every time what berth knows about a tracked object changes.
type Progress func(id resource.Identity, r readiness.Result)

// WaitError says which objects did not reach the state waited for, and why.
type WaitError struct {
	// Want is what was waited for: "ready" or "gone".
	Want string
	// Failed is set when an object failed (wait for ready only): nothing more will change it.
	Failed *resource.Identity
	// Expression is the custom readiness expression that found Failed failed (an expression of
	// its helm.sh/readiness-failure annotation, or a health check's), when one did.
	Expression string
	// Pending holds each object still not there, with the last thing known about it.
	Pending map[resource.Identity]string
	// Cause ended the wait when nothing failed: the context's, or the API server's refusal to
	// list or watch an object's resource.
	Cause error
}

func (e *WaitError) Error() string {
	var b strings.Builder
	if e.Failed != nil {
		fmt.Fprintf(&b, "%s failed: %s", e.Failed, e.Pending[*e.Failed])
		return b.String()
	}
	fmt.Fprintf(&b, "%d object(s) not %s: %v", len(e.Pending), e.Want, e.Cause)
	ids := make([]resource.Identity, 0, len(e.Pending))
	for id := range e.Pending {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, resource.Compare)
	for _, id := range ids {
		fmt.Fprintf(&b, "\n  %s: %s", id, e.Pending[id])
	}
	return b.String()
}

func (e *WaitError) Unwrap() error { return e.Cause }

// WaitReady waits, by watching, until every target is ready, one of them fails, or ctx ends. A
// failed target ends the wait as soon as it is seen, with a *WaitError that names it (and the
// custom readiness expression that found it failed, if one did).
// A CustomResourceDefinition is ready once it is Established and discovery serves its kind: only
// then can objects of the kind be reached (discovery follows Established by a moment).
func (c *Client) WaitReady(ctx context.Context, targets []resource.Identity, opts readiness.Options, progress Progress) error {
	var crds []*unstructured.Unstructured
	err := c.waitFor(ctx, "ready", targets, progress, func(_ resource.Identity, obj *unstructured.Unstructured) readiness.Result {
		if obj == nil {
			return readiness.Result{State: readiness.InProgress, Message: "not found"}
		}
		r := readiness.Compute(obj, opts)
		if r.State == readiness.Ready && obj.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, obj)
		}
		return r
	})
	if err != nil || len(crds) == 0 {
		return err
	}
	return c.waitServed(ctx, crds)
}

// servedPoll is how often discovery is asked again for the kinds of new CRDs.
const servedPoll = 20 * time.Millisecond

// waitServed waits until discovery serves the kind of every CRD, each at every version it serves.
func (c *Client) waitServed(ctx context.Context, crds []*unstructured.Unstructured) error {
	for {
		c.ResetMapper()
		var missing []string
		for _, crd := range crds {
			for _, gvk := range servedKinds(crd) {
				if _, err := c.Mapping(gvk); err != nil {
					missing = append(missing, gvk.Kind+"."+gvk.Group+"/"+gvk.Version)
				}
			}
		}
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-time.After(servedPoll):
		case <-ctx.Done():
			return fmt.Errorf("CustomResourceDefinitions are Established but discovery does not serve %s: %w",
				strings.Join(missing, ", "), context.Cause(ctx))
		}
	}
}

// servedKinds returns the kind a CRD defines at each version it serves.
func servedKinds(crd *unstructured.Unstructured) []schema.GroupVersionKind {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []schema.GroupVersionKind
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if served, _ := m["served"].(bool); served && name != "" {
			out = append(out, schema.GroupVersionKind{Group: group, Version: name, Kind: kind})
		}
	}
	return out
}

// WaitAbsent waits, by watching, until no target exists any more with the UID it had (an object
// recreated under the same name counts as gone), or ctx ends.
func (c *Client) WaitAbsent(ctx context.Context, targets map[resource.Identity]types.UID, progress Progress) error {
	ids := make([]resource.Identity, 0, len(targets))
	for id := range targets {
		ids = append(ids, id)
	}
	return c.waitFor(ctx, "gone", ids, progress, func(id resource.Identity, obj *unstructured.Unstructured) readiness.Result {
		if obj == nil || (targets[id] != "" && obj.GetUID() != targets[id]) {
			return readiness.Result{State: readiness.Ready, Message: "gone"}
		}
		return readiness.Result{State: readiness.InProgress, Message: presence(obj)}
	})
}

// presence describes why an object that should go is still there.
func presence(obj *unstructured.Unstructured) string {
	if obj.GetDeletionTimestamp() == nil {
		return "still exists, not being deleted"
	}
	if f := obj.GetFinalizers(); len(f) > 0 {
		return "being deleted, waiting for finalizers " + strings.Join(f, ", ")
	}
	return "being deleted"
}

func (c *Client) waitFor(ctx context.Context, want string, targets []resource.Identity, progress Progress,
	judge func(resource.Identity, *unstructured.Unstructured) readiness.Result) error {
	if len(targets) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make(chan observation)
	if _, err := c.observe(ctx, targets, out); err != nil {
		return err
	}
	pending := make(map[resource.Identity]string, len(targets))
	for _, id := range targets {
		pending[id] = "not observed yet"
	}
	for len(pending) > 0 {
		select {
		case o := <-out:
			if o.refused != nil {
				return &WaitError{Want: want, Pending: pending, Cause: o.refused}
			}
			last, tracked := pending[o.id]
			if !tracked {
				continue
			}
			obj := o.obj
			if o.gone {
				obj = nil
			}
			r := judge(o.id, obj)
			if progress != nil && r.Message != last {
				progress(o.id, r)
			}
			switch r.State {
			case readiness.Ready:
				delete(pending, o.id)
			case readiness.Failed:
				pending[o.id] = r.Message
				id := o.id
				return &WaitError{Want: want, Failed: &id, Expression: r.Expression, Pending: pending}
			default:
				pending[o.id] = r.Message
			}
		case <-ctx.Done():
			return &WaitError{Want: want, Pending: pending, Cause: context.Cause(ctx)}
		}
	}
	return nil
}
