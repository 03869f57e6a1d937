package controller

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
)

// leadership is the controller's leader election lock (its shard's Lease), which notes when the
// controller last renewed it: the controller leads while its last renewal is within the renew
// deadline, the rule by which leader election itself gives the lease up. A controller past it may
// have lost the Lease to another replica, which acts on the same Releases: what it still had to
// write of a Release (its status after a deadline or a shutdown) it writes no more.
type leadership struct {
	resourcelock.Interface
	// renewDeadline is how long after a renewal the controller leads without another.
	renewDeadline time.Duration
	now           func() time.Time
	// renewed is when the lock last recorded this controller as its holder (Unix nanoseconds);
	// 0 when never.
	renewed atomic.Int64
}

func newLeadership(lock resourcelock.Interface, renewDeadline time.Duration, now func() time.Time) *leadership {
	return &leadership{Interface: lock, renewDeadline: renewDeadline, now: now}
}

// Create records the lock, as its holder's first acquisition does.
func (l *leadership) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	t := l.now()
	err := l.Interface.Create(ctx, rec)
	l.note(rec, t, err)
	return err
}

// Update records the lock, as each renewal does.
func (l *leadership) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	t := l.now()
	err := l.Interface.Update(ctx, rec)
	l.note(rec, t, err)
	return err
}

// note takes a write of rec begun at t: one that names this controller and succeeded renews its
// leadership from t (the Lease said so from then at the latest); any other ends it.
func (l *leadership) note(rec resourcelock.LeaderElectionRecord, t time.Time, err error) {
	if err == nil && rec.HolderIdentity == l.Identity() {
		l.renewed.Store(t.UnixNano())
		return
	}
	if err == nil {
		l.renewed.Store(0) // the controller gave the Lease up
	}
}

// Leads says whether the controller still leads: it renewed the Lease within the renew
// deadline.
func (l *leadership) Leads() bool {
	at := l.renewed.Load()
	return at != 0 && l.now().Before(time.Unix(0, at).Add(l.renewDeadline))
}

// leaderRenewDeadline is how long the controller's leader election retries renewing its Lease
// before it gives the lead up: controller-runtime's default, stated so that the manager and
// leadership agree on it.
const leaderRenewDeadline = 10 * time.Second

// newLeaderLock is the leader election lock of a controller that serves the Releases of the
// Lease name in namespace (labelled with labels), as controller-runtime would make it, noting
// its renewals.
func newLeaderLock(cfg *rest.Config, namespace, name string, labels map[string]string) (*leadership, error) {
	if namespace == "" {
		return nil, fmt.Errorf("leader election Lease %s: no namespace: run in a cluster, or give the controller a namespace to elect its leader in", name)
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("leader election Lease %s/%s: name this replica: %w", namespace, name, err)
	}
	id := host + "_" + string(uuid.NewUUID())
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	// No single request outlasts half the renew deadline, as controller-runtime bounds them.
	cfg.Timeout = max(leaderRenewDeadline/2, time.Second)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	events := record.NewBroadcaster()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	lock, err := resourcelock.NewWithLabels(resourcelock.LeasesResourceLock, namespace, name, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: events.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: id})}, labels)
	if err != nil {
		return nil, err
	}
	return newLeadership(lock, leaderRenewDeadline, time.Now), nil
}
