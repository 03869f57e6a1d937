package controller

import (
	"context"
	"errors"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/berthdev/berth/api/v1alpha1"
)

// LeaderLockForTest is the controller's leader election lock of the Lease name in namespace, and
// whether it leads, by the rule of leadership with renewDeadline.
func LeaderLockForTest(cfg *rest.Config, namespace, name string, renewDeadline time.Duration) (resourcelock.Interface, func() bool, error) {
	lock, err := newLeaderLock(cfg, namespace, name, nil)
	if err != nil {
		return nil, nil, err
	}
	lead := newLeadership(lock.Interface, renewDeadline, time.Now)
	return lead, lead.Leads, nil
}

// WriteFailureForTest writes rel's status as r does at the end of an operation that failed for
// reason.
func (r *Reconciler) WriteFailureForTest(ctx context.Context, rel *v1alpha1.Release, reason string) error {
	next := rel.DeepCopy()
	markFailed(next, reason, errors.New("the operation timed out"), false)
	return r.patchStatus(ctx, rel, next)
}

// MayWatchClusterViewForTest says whether the controller of cfg watches what a preflight reads.
func MayWatchClusterViewForTest(cfg *rest.Config) error { return mayWatchClusterView(cfg) }
