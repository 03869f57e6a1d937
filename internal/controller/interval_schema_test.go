package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/testenv"
)

// TestReleaseSchemaIntervalMinimum: the CRD refuses an interval under 10s with a message that
// names spec.interval, and takes 10s and more.
func TestReleaseSchemaIntervalMinimum(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	c := startClient(t, env)
	tests := []struct {
		interval time.Duration
		refused  bool
	}{
		{time.Millisecond, true},
		{time.Second, true},
		{9*time.Second + 999*time.Millisecond, true},
		{10 * time.Second, false},
		{10 * time.Minute, false},
	}
	for i, tt := range tests {
		t.Run(tt.interval.String(), func(t *testing.T) {
			rel := smallestRelease(t, env.Namespace, "https://charts.example.test", "deployer")
			rel.Name = fmt.Sprintf("web-%d", i)
			rel.Spec.Interval = &metav1.Duration{Duration: tt.interval}
			err := c.Create(t.Context(), rel)
			switch {
			case tt.refused && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.interval must be at least 10s")):
				t.Errorf("create with interval %s: %v, want it refused as invalid, naming spec.interval", tt.interval, err)
			case !tt.refused && err != nil:
				t.Errorf("create with interval %s: %v", tt.interval, err)
			}
		})
	}
}

// TestReleaseSchemaRetryBackoffMinimum: the CRD refuses a retryBackoff under 1s, naming it, and
// takes 1s and more.
func TestReleaseSchemaRetryBackoffMinimum(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	c := startClient(t, env)
	tests := []struct {
		backoff time.Duration
		refused bool
	}{
		{time.Nanosecond, true},
		{999 * time.Millisecond, true},
		{time.Second, false},
		{30 * time.Second, false},
	}
	for i, tt := range tests {
		t.Run(tt.backoff.String(), func(t *testing.T) {
			rel := smallestRelease(t, env.Namespace, "https://charts.example.test", "deployer")
			rel.Name = fmt.Sprintf("web-%d", i)
			rel.Spec.Upgrade = &v1alpha1.UpgradeSpec{OperationSpec: v1alpha1.OperationSpec{
				Retries: 1, RetryBackoff: &metav1.Duration{Duration: tt.backoff}}}
			err := c.Create(t.Context(), rel)
			switch {
			case tt.refused && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "retryBackoff must be at least 1s")):
				t.Errorf("create with retryBackoff %s: %v, want it refused as invalid, naming retryBackoff", tt.backoff, err)
			case !tt.refused && err != nil:
				t.Errorf("create with retryBackoff %s: %v", tt.backoff, err)
			}
		})
	}
}
