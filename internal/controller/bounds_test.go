package controller

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/lifecycle"
)

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// TestTimeoutOf: spec.timeout or its default, at most the maximum; 0 is no maximum.
func TestTimeoutOf(t *testing.T) {
	for _, tt := range []struct {
		spec, max, want time.Duration
	}{
		{0, 0, defaultTimeout},
		{0, time.Minute, time.Minute},
		{8760 * time.Hour, 0, 8760 * time.Hour},
		{8760 * time.Hour, time.Hour, time.Hour},
		{20 * time.Second, time.Hour, 20 * time.Second},
		{-time.Second, time.Hour, defaultTimeout},
	} {
		s := v1alpha1.ReleaseSpec{}
		if tt.spec != 0 {
			s.Timeout = duration(tt.spec)
		}
		if got := timeoutOf(s, tt.max); got != tt.want {
			t.Errorf("timeout %s, maximum %s: %s, want %s", tt.spec, tt.max, got, tt.want)
		}
	}
}

// TestWithLimits: a timeout over the maximum is capped and an interval under the minimum raised,
// each saying so in a condition once; a spec within the limits has neither condition.
func TestWithLimits(t *testing.T) {
	rel := &v1alpha1.Release{Spec: v1alpha1.ReleaseSpec{Timeout: duration(8760 * time.Hour)}}
	rel.Generation = 1
	d := &desired{Timeout: 8760 * time.Hour, Interval: time.Second}
	set := withLimits(rel, d, 30*time.Second)
	if d.Timeout != 30*time.Second || d.Interval != MinInterval {
		t.Fatalf("timeout %s, interval %s; want 30s and %s", d.Timeout, d.Interval, MinInterval)
	}
	if len(set) != 2 {
		t.Fatalf("conditions newly set: %v, want two", set)
	}
	c := meta.FindStatusCondition(rel.Status.Conditions, ConditionTimeoutCapped)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonAboveMaximum ||
		!strings.Contains(c.Message, "spec.timeout 8760h0m0s is over the controller's maximum of 30s (--max-timeout)") {
		t.Errorf("TimeoutCapped: %+v", c)
	}
	c = meta.FindStatusCondition(rel.Status.Conditions, ConditionIntervalRaised)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonBelowMinimum ||
		!strings.Contains(c.Message, "spec.interval 1s is under the minimum of 10s") {
		t.Errorf("IntervalRaised: %+v", c)
	}

	// The same spec again: the conditions stay, and are not new.
	d = &desired{Timeout: 8760 * time.Hour, Interval: time.Second}
	if set := withLimits(rel, d, 30*time.Second); len(set) != 0 {
		t.Errorf("same spec again: newly set %v, want none", set)
	}

	// The default timeout, lowered to a smaller maximum: no condition, the Release asked for
	// nothing.
	fresh := &v1alpha1.Release{}
	d = &desired{Timeout: defaultTimeout, Interval: time.Minute}
	if set := withLimits(fresh, d, time.Minute); len(set) != 0 || d.Timeout != time.Minute || len(fresh.Status.Conditions) != 0 {
		t.Errorf("default timeout over the maximum: newly set %v, timeout %s", set, d.Timeout)
	}

	// Within the limits, or no maximum: neither condition.
	d = &desired{Timeout: 8760 * time.Hour, Interval: time.Minute}
	if set := withLimits(rel, d, 0); len(set) != 0 || d.Timeout != 8760*time.Hour || d.Interval != time.Minute {
		t.Errorf("no maximum: newly set %v, timeout %s, interval %s", set, d.Timeout, d.Interval)
	}
	if len(rel.Status.Conditions) != 0 {
		t.Errorf("conditions left: %v", rel.Status.Conditions)
	}
}

// TestReconcileBounds: the work ends at the timeout, the reconcile the lifecycle's grace later, each
// with a cause that says so; ending either is not the controller stopping, and the operation
// has the time left to the work.
func TestReconcileBounds(t *testing.T) {
	bound, work, cancel := reconcileBounds(context.Background(), time.Nanosecond)
	defer cancel()
	<-work.Done()
	if !errors.As(context.Cause(work), new(*ReconcileTimeoutError)) || !strings.Contains(context.Cause(work).Error(), "the Release's timeout") {
		t.Errorf("work ended with %v", context.Cause(work))
	}
	if bound.Err() != nil {
		t.Errorf("reconcile ended with its work: %v", bound.Err())
	}
	if stopping(work) {
		t.Error("the work's deadline is taken for the controller stopping")
	}
	if got := workLeft(work, time.Hour); got != time.Nanosecond {
		t.Errorf("time left after the work's deadline: %s, want 1ns", got)
	}
	dl, _ := bound.Deadline()
	if left := time.Until(dl); left <= lifecycle.Grace/2 || left > lifecycle.Grace {
		t.Errorf("reconcile's deadline in %s, want about %s", left, lifecycle.Grace)
	}

	parent, stop := context.WithCancel(context.Background())
	bound, work, cancel = reconcileBounds(parent, time.Hour)
	defer cancel()
	if got := workLeft(work, 2*time.Hour); got > time.Hour || got < time.Hour-time.Minute {
		t.Errorf("time left to an hour's work: %s", got)
	}
	stop()
	if !stopping(bound) || !stopping(work) {
		t.Error("a canceled parent is not the controller stopping")
	}
}

// TestStatusContext: a status write has the lifecycle's grace even when the reconcile's context
// ended.
func TestStatusContext(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	ctx, done := statusContext(ended)
	defer done()
	if ctx.Err() != nil {
		t.Fatalf("status context ended with its parent: %v", ctx.Err())
	}
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > lifecycle.Grace {
		t.Errorf("status context's deadline %v, want within %s", dl, lifecycle.Grace)
	}
}

// TestUnanswered: a request to a Release's cluster that got no answer names the cluster's host;
// an answer of its API server, and any error of the controller's own cluster, stay as they are.
func TestUnanswered(t *testing.T) {
	c := &kube.Clients{Config: &rest.Config{Host: "https://user:secret@held.example:6443/path"}}
	remote := &desired{Namespace: "team", Timeout: 30 * time.Second, Remote: &remoteRef{Secret: "kubeconfig", Account: "proxy"}}
	timedOut := &url.Error{Op: "Get", URL: "https://held.example:6443/api/v1/namespaces/team/serviceaccounts/proxy", Err: context.DeadlineExceeded}
	err := unanswered(remote, c, fmt.Errorf("read ServiceAccount team/proxy: %w", timedOut))
	var ce *ClusterError
	if !errors.As(err, &ce) || ce.Reason != ReasonClusterUnreachable {
		t.Fatalf("no answer: %v, want a ClusterError", err)
	}
	if want := "cluster held.example:6443 (kubeconfig in Secret team/kubeconfig) did not answer within 30s: timed out"; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("message carries the server URL's credentials: %q", err)
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "proxy", errors.New("no"))
	for _, e := range []error{forbidden, errors.New("record of release web does not decode"), nil} {
		if got := unanswered(remote, c, e); got != e {
			t.Errorf("%v: became %v", e, got)
		}
	}
	local := &desired{Namespace: "team", Timeout: 30 * time.Second}
	if got := unanswered(local, c, timedOut); got != error(timedOut) {
		t.Errorf("the controller's own cluster: %v became %v", timedOut, got)
	}
}
