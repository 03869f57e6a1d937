package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
)

// TestTakeRequest: a reconcile request not handled yet is recorded in the status and starts a
// failed Release's attempt anew, so that it is tried once more; one already handled, or a
// Release that did not fail, keeps its attempt as it was.
func TestTakeRequest(t *testing.T) {
	failed := []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonUpgradeFailed}}
	ready := []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue}}
	reconciling := []metav1.Condition{failed[0], {Type: ConditionReconciling, Status: metav1.ConditionTrue}}
	long := strings.Repeat("9", v1alpha1.MaxReconcileRequestLength+1)
	tests := []struct {
		name       string
		asked      string
		handled    string
		conditions []metav1.Condition
		taken      bool
		wantAt     string
		wantReset  bool
	}{
		{name: "new value on a failed Release", asked: "t2", handled: "t1", conditions: failed, taken: true, wantAt: "t2", wantReset: true},
		{name: "first value on a failed Release", asked: "t1", conditions: failed, taken: true, wantAt: "t1", wantReset: true},
		{name: "value already handled", asked: "t1", handled: "t1", conditions: failed, wantAt: "t1"},
		{name: "no annotation", handled: "t1", conditions: failed, wantAt: "t1"},
		{name: "new value on a Ready Release", asked: "t2", handled: "t1", conditions: ready, taken: true, wantAt: "t2"},
		{name: "new value while an operation is underway", asked: "t2", conditions: reconciling, taken: true, wantAt: "t2"},
		{name: "long value, as its digest", asked: long, conditions: failed, taken: true, wantAt: reconcileRequest(long), wantReset: true},
		{name: "long value already handled", asked: long, handled: reconcileRequest(long), conditions: failed, wantAt: reconcileRequest(long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
			if tt.asked != "" {
				rel.Annotations = map[string]string{v1alpha1.ReconcileRequestAnnotation: tt.asked}
			}
			st := &rel.Status
			st.Conditions, st.LastHandledReconcileAt, st.Failures = tt.conditions, tt.handled, 3
			st.LastAttemptedGeneration, st.LastAttemptedChartVersion, st.LastAttemptedValuesDigest = 3, "1.0.0", "v"
			if got := takeRequest(rel); got != tt.taken {
				t.Errorf("takeRequest = %v, want %v", got, tt.taken)
			}
			if st.LastHandledReconcileAt != tt.wantAt {
				t.Errorf("lastHandledReconcileAt = %q, want %q", st.LastHandledReconcileAt, tt.wantAt)
			}
			reset := st.Failures == 0 && st.LastAttemptedChartVersion == "" && st.LastAttemptedValuesDigest == ""
			kept := st.Failures == 3 && st.LastAttemptedChartVersion == "1.0.0" && st.LastAttemptedValuesDigest == "v"
			if tt.wantReset && !reset || !tt.wantReset && !kept {
				t.Errorf("attempt after the request: failures %d, chart version %q, values digest %q; want reset %v",
					st.Failures, st.LastAttemptedChartVersion, st.LastAttemptedValuesDigest, tt.wantReset)
			}
			if st.LastAttemptedGeneration != 3 {
				t.Errorf("lastAttemptedGeneration = %d, want 3 (the account's check on deletion reads it)", st.LastAttemptedGeneration)
			}
		})
	}
}

// TestRequestRetriesExhausted: a Release whose retries are spent waits; a new reconcile request
// makes the reconcile act (one more attempt), and after it fails again it waits once more.
func TestRequestRetriesExhausted(t *testing.T) {
	errTest := errors.New("a template failed")
	d := &desired{ValuesDigest: "v"}
	d.Install.Retries = 1
	rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	startAttempt(rel, "1.0.0", "v")
	attemptFailed(rel, d, lifecycle.State{}, ReasonInstallFailed, errTest)
	attemptFailed(rel, d, lifecycle.State{}, ReasonInstallFailed, errTest)
	now := time.Now()
	if acts, _, err := decide(rel, lifecycle.State{}, d, "1.0.0", now); err != nil || acts[0] != lifecycle.ActWait {
		t.Fatalf("retries spent: %v %v, want a wait", acts, err)
	}
	rel.Annotations = map[string]string{v1alpha1.ReconcileRequestAnnotation: "t1"}
	takeRequest(rel)
	if acts, _, err := decide(rel, lifecycle.State{}, d, "1.0.0", now); err != nil || acts[0] != lifecycle.ActInstall {
		t.Fatalf("after a request: %v %v, want an install", acts, err)
	}
	startAttempt(rel, "1.0.0", "v")
	if rel.Status.Failures != 0 {
		t.Errorf("failures %d at the requested attempt, want 0", rel.Status.Failures)
	}
	attemptFailed(rel, d, lifecycle.State{}, ReasonInstallFailed, errTest)
	takeRequest(rel)
	// One failure of retries: 1 is retried after its backoff: a wait, not an install now.
	if acts, _, err := decide(rel, lifecycle.State{}, d, "1.0.0", now); err != nil || acts[0] != lifecycle.ActWait {
		t.Errorf("the request handled, failed again: %v %v, want a wait", acts, err)
	}
}

// FuzzReconcileRequest: whatever a tenant writes in the annotation, what the cache and the
// status keep of it is at most 128 bytes (or a 71-byte digest), the same for the same value,
// and handling it again changes nothing.
func FuzzReconcileRequest(f *testing.F) {
	f.Add("2026-01-02T03:04:05.000000006Z")
	f.Add("")
	f.Add(strings.Repeat("x", v1alpha1.MaxReconcileRequestLength+1))
	f.Fuzz(func(t *testing.T, value string) {
		got := reconcileRequest(value)
		if len(got) > v1alpha1.MaxReconcileRequestLength {
			t.Fatalf("%d bytes kept of a %d-byte value", len(got), len(value))
		}
		if reconcileRequest(got) != got {
			t.Fatalf("kept %q becomes %q when kept again", got, reconcileRequest(got))
		}
		if len(value) <= v1alpha1.MaxReconcileRequestLength && got != value {
			t.Fatalf("a %d-byte value kept as %q", len(value), got)
		}
		rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.ReconcileRequestAnnotation: value}}}
		takeRequest(rel)
		if rel.Status.LastHandledReconcileAt != got || takeRequest(rel) {
			t.Fatalf("status %q after a request %q, or handled twice", rel.Status.LastHandledReconcileAt, got)
		}
	})
}
