package cluster

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

// Create creates obj (already normalized) and returns it as stored. Unlike Apply, it fails when
// the object exists: a hook is a new run, never an update of an old one.
func (c *Client) Create(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	id := resource.IdentityOf(obj)
	ri, _, err := c.resourceFor(id, obj.GroupVersionKind().Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	out, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("%s: create: %w", id, err)
	}
	return out, nil
}

// RunHook creates the hook object obj (already normalized) and follows it, by UID, to its outcome:
// a Job completed or failed, a Pod succeeded or failed; any other kind has its outcome once
// created. The watch starts before the creation, so every change of the new object is seen, even
// of a Job that finishes and is deleted at once (ttlSecondsAfterFinished: 0). An object deleted
// before it finished is a failure that says what was last seen of it.
func (c *Client) RunHook(ctx context.Context, obj *unstructured.Unstructured, progress Progress) (*unstructured.Unstructured, readiness.Result, error) {
	id := resource.IdentityOf(obj)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make(chan observation)
	synced, err := c.observe(ctx, []resource.Identity{id}, out)
	if err != nil {
		return nil, readiness.Result{}, err
	}
	for waiting := true; waiting; {
		select {
		case <-out: // what existed before the creation does not matter
		case <-synced:
			waiting = false
		case <-ctx.Done():
			return nil, readiness.Result{}, fmt.Errorf("%s: watch: %w", id, context.Cause(ctx))
		}
	}
	created, err := c.Create(ctx, obj)
	if err != nil {
		return nil, readiness.Result{}, err
	}
	last := hookOutcome(created)
	report := func(r readiness.Result) {
		if progress != nil && r.Message != last.Message {
			progress(id, r)
		}
		last = r
	}
	if last.State != readiness.InProgress {
		return created, last, nil
	}
	for {
		select {
		case o := <-out:
			if o.obj == nil || o.obj.GetUID() != created.GetUID() {
				continue // the absence noted before the creation was seen, or another object
			}
			r := hookOutcome(o.obj)
			if o.gone && r.State == readiness.InProgress {
				return created, readiness.Result{State: readiness.Failed,
					Message: fmt.Sprintf("deleted before it finished (last seen: %s)", last.Message)}, nil
			}
			report(r)
			if r.State != readiness.InProgress {
				return created, r, nil
			}
		case <-ctx.Done():
			return created, last, fmt.Errorf("%s: not finished: %w (last seen: %s)", id, context.Cause(ctx), last.Message)
		}
	}
}

func hookOutcome(obj *unstructured.Unstructured) readiness.Result {
	switch obj.GroupVersionKind().GroupKind().String() {
	case "Job.batch":
		return readiness.Compute(obj, readiness.Options{WaitForJobs: true})
	case "Pod":
		// A hook Pod is done when it ran to completion, not when it is ready.
		if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase != "Succeeded" && phase != "Failed" {
			return readiness.Result{State: readiness.InProgress, Message: "Pod is " + phaseOr(phase)}
		}
		return readiness.Compute(obj, readiness.Options{})
	default:
		return readiness.Result{State: readiness.Ready, Message: "created"}
	}
}

func phaseOr(p string) string {
	if p == "" {
		return "Pending"
	}
	return p
}
