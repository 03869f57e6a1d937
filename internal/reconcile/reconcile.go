// Package reconcile asks the controller for one more reconcile of a Release, as its annotation
// reconcile.berth.dev/requestedAt does, and waits for the outcome.
package reconcile

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
)

// conditionReady and conditionReconciling are the controller's condition types.
const (
	conditionReady       = "Ready"
	conditionReconciling = "Reconciling"
)

// pollInterval is how often Wait reads the Release.
const pollInterval = time.Second

// SuspendedError says the Release is suspended: the controller handles no request on it.
type SuspendedError struct{ Namespace, Name string }

func (e *SuspendedError) Error() string {
	return fmt.Sprintf("Release/%s/%s is suspended (spec.suspend): the controller does not reconcile it", e.Namespace, e.Name)
}

// NotReadyError says the Release's reconcile ended with Ready False.
type NotReadyError struct {
	Namespace, Name string
	// Ready is the Ready condition it ended with.
	Ready metav1.Condition
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("Release/%s/%s is not ready: %s: %s", e.Namespace, e.Name, e.Ready.Reason, e.Ready.Message)
}

// UnhandledError says the request was not handled, or its reconcile did not end, before the
// deadline: Handled is the last value the controller handled (none when it handled no request,
// as when no controller serves the Release), Ready its Ready condition then, if any.
type UnhandledError struct {
	Namespace, Name string
	Requested       string
	Handled         string
	Ready           *metav1.Condition
	Err             error
}

func (e *UnhandledError) Error() string {
	if e.Handled != e.Requested {
		return fmt.Sprintf("Release/%s/%s: the request %s was not handled: %v", e.Namespace, e.Name, e.Requested, e.Err)
	}
	return fmt.Sprintf("Release/%s/%s: the request %s was handled, but its reconcile did not end: %v", e.Namespace, e.Name, e.Requested, e.Err)
}

func (e *UnhandledError) Unwrap() error { return e.Err }

// Request sets the reconcile request of the Release key to now, written as RFC3339Nano, and
// returns that value; a suspended Release is refused (SuspendedError).
func Request(ctx context.Context, c client.Client, key types.NamespacedName, now time.Time) (string, error) {
	var rel v1alpha1.Release
	if err := c.Get(ctx, key, &rel); err != nil {
		return "", err
	}
	if rel.Spec.Suspend {
		return "", &SuspendedError{Namespace: key.Namespace, Name: key.Name}
	}
	value := now.UTC().Format(time.RFC3339Nano)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.ReconcileRequestAnnotation, value)
	if err := c.Patch(ctx, &rel, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return "", err
	}
	return value, nil
}

// Wait waits until the controller handled the request value on the Release key and its
// reconcile ended (Ended), and returns the Release then: a NotReadyError with it when it is
// not Ready, an UnhandledError when ctx ends first.
func Wait(ctx context.Context, c client.Client, key types.NamespacedName, value string) (*v1alpha1.Release, error) {
	var rel v1alpha1.Release
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, &rel); err != nil {
			return false, err
		}
		return Ended(&rel, value), nil
	})
	if err != nil {
		if ctx.Err() == nil {
			return nil, err
		}
		return nil, &UnhandledError{Namespace: key.Namespace, Name: key.Name, Requested: value,
			Handled: rel.Status.LastHandledReconcileAt, Ready: meta.FindStatusCondition(rel.Status.Conditions, conditionReady), Err: ctx.Err()}
	}
	ready := meta.FindStatusCondition(rel.Status.Conditions, conditionReady)
	if ready.Status == metav1.ConditionFalse {
		return &rel, &NotReadyError{Namespace: key.Namespace, Name: key.Name, Ready: *ready}
	}
	return &rel, nil
}

// Ended says the controller handled the request value on rel and the reconcile it asked for
// ended: its Ready condition is of the current generation and it is not Reconciling.
func Ended(rel *v1alpha1.Release, value string) bool {
	st := rel.Status
	if st.LastHandledReconcileAt != value || st.ObservedGeneration != rel.Generation {
		return false
	}
	ready := meta.FindStatusCondition(st.Conditions, conditionReady)
	if ready == nil || ready.ObservedGeneration != rel.Generation || ready.Status == metav1.ConditionUnknown {
		return false
	}
	return !meta.IsStatusConditionTrue(st.Conditions, conditionReconciling)
}
