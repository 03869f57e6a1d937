package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
)

func TestRetryWait(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	failedAt := now.Add(-10 * time.Second)
	history := []v1alpha1.OperationRecord{{Operation: "install", Outcome: "Failed", StartedAt: metav1.NewTime(failedAt.Add(-5 * time.Second)), Duration: metav1.Duration{Duration: 5 * time.Second}}}
	ops := func(install, upgrade v1alpha1.OperationSpec) *desired {
		return &desired{Install: v1alpha1.InstallSpec{OperationSpec: install}, Upgrade: v1alpha1.UpgradeSpec{OperationSpec: upgrade}}
	}
	twice := v1alpha1.OperationSpec{Retries: 2, RetryBackoff: &metav1.Duration{Duration: 8 * time.Second}}
	tests := []struct {
		name      string
		d         *desired
		failures  int32
		deployed  bool
		wantWait  time.Duration
		wantRetry bool
	}{
		{name: "no retries", d: ops(v1alpha1.OperationSpec{}, v1alpha1.OperationSpec{}), failures: 1},
		{name: "first retry is due", d: ops(twice, v1alpha1.OperationSpec{}), failures: 1, wantRetry: true},
		{name: "second retry waits twice the backoff", d: ops(twice, v1alpha1.OperationSpec{}), failures: 2, wantWait: 6 * time.Second, wantRetry: true},
		{name: "retries spent", d: ops(twice, v1alpha1.OperationSpec{}), failures: 3},
		{name: "default backoff", d: ops(v1alpha1.OperationSpec{Retries: 1}, v1alpha1.OperationSpec{}), failures: 1, wantWait: 20 * time.Second, wantRetry: true},
		{name: "a deployed release retries upgrades", d: ops(twice, v1alpha1.OperationSpec{}), failures: 1, deployed: true},
		{name: "a failed first install retries installs", d: ops(v1alpha1.OperationSpec{}, twice), failures: 1},
		{name: "never failed", d: ops(twice, twice), failures: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := &v1alpha1.Release{Status: v1alpha1.ReleaseStatus{Failures: tt.failures, History: history}}
			wait, retry := retryWait(rel, tt.d, lifecycle.State{Deployed: tt.deployed}, now)
			if wait != tt.wantWait || retry != tt.wantRetry {
				t.Errorf("retryWait = %v, %v; want %v, %v", wait, retry, tt.wantWait, tt.wantRetry)
			}
		})
	}
}

func TestBackoffDoublesUpToABound(t *testing.T) {
	op := v1alpha1.OperationSpec{RetryBackoff: &metav1.Duration{Duration: time.Second}}
	for failures, want := range map[int32]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 1000: maxRetryBackoff} {
		if got := backoff(op, failures); got != want {
			t.Errorf("backoff after %d failures = %v, want %v", failures, got, want)
		}
	}
	// A Release written before the CRD held retryBackoff to 1s still waits 1s.
	op.RetryBackoff.Duration = time.Nanosecond
	if got := backoff(op, 1); got != minRetryBackoff {
		t.Errorf("backoff of 1ns = %v, want %v", got, minRetryBackoff)
	}
}
