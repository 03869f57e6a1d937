package cluster

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

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

// WaitHook waits, by watching, until the hook object id with uid has an outcome: a Job completed
// or failed, a Pod succeeded or failed; any other kind has its outcome once it exists. An object
// that disappears (or is replaced) before its outcome was seen is a failure that says what was
// last seen of it.
func (c *Client) WaitHook(ctx context.Context, id resource.Identity, uid types.UID, progress Progress) (readiness.Result, error) {
	last := "nothing observed"
	var outcome readiness.Result
	err := c.waitFor(ctx, "finished", []resource.Identity{id}, progress, func(_ resource.Identity, obj *unstructured.Unstructured) readiness.Result {
		if obj == nil || obj.GetUID() != uid {
			outcome = readiness.Result{State: readiness.Failed,
				Message: fmt.Sprintf("deleted before its outcome was observed (last seen: %s)", last)}
			return outcome
		}
		outcome = hookOutcome(obj)
		last = outcome.Message
		return outcome
	})
	if outcome.State == readiness.Failed {
		return outcome, nil
	}
	return outcome, err
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
