package reconcile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
)

// TestEnded: a request's reconcile has ended once the controller handled its value, and the
// Ready condition is of the current generation, True or False, with no operation under way.
func TestEnded(t *testing.T) {
	ready := func(status metav1.ConditionStatus, generation int64) metav1.Condition {
		return metav1.Condition{Type: conditionReady, Status: status, ObservedGeneration: generation}
	}
	reconciling := metav1.Condition{Type: conditionReconciling, Status: metav1.ConditionTrue, ObservedGeneration: 2}
	tests := []struct {
		name       string
		handled    string
		observed   int64
		conditions []metav1.Condition
		want       bool
	}{
		{name: "handled, Ready", handled: "t1", observed: 2, conditions: []metav1.Condition{ready(metav1.ConditionTrue, 2)}, want: true},
		{name: "handled, failed", handled: "t1", observed: 2, conditions: []metav1.Condition{ready(metav1.ConditionFalse, 2)}, want: true},
		{name: "not handled yet", handled: "t0", observed: 2, conditions: []metav1.Condition{ready(metav1.ConditionFalse, 2)}},
		{name: "handled, under way", handled: "t1", observed: 2, conditions: []metav1.Condition{ready(metav1.ConditionUnknown, 2), reconciling}},
		{name: "handled, an older generation's Ready", handled: "t1", observed: 2, conditions: []metav1.Condition{ready(metav1.ConditionTrue, 1)}},
		{name: "handled, status of an older generation", handled: "t1", observed: 1, conditions: []metav1.Condition{ready(metav1.ConditionTrue, 2)}},
		{name: "handled, no Ready condition", handled: "t1", observed: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			rel.Status.LastHandledReconcileAt, rel.Status.ObservedGeneration, rel.Status.Conditions = tt.handled, tt.observed, tt.conditions
			if got := Ended(rel, "t1"); got != tt.want {
				t.Errorf("Ended = %v, want %v", got, tt.want)
			}
		})
	}
}
