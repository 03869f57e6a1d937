package controller_test

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
)

// TestLeadershipTakenAway: a controller elected on a real Lease writes a Release's status while
// it leads; once another holder takes the Lease and the controller's renewals fail past the
// renew deadline, it writes none, though the status it would write differs from the Release's.
func TestLeadershipTakenAway(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	c := startClient(t, env)
	const lease, renewDeadline = "lead.berth.dev", 2 * time.Second
	lock, leads, err := controller.LeaderLockForTest(env.Config, env.Namespace, lease, renewDeadline)
	if err != nil {
		t.Fatal(err)
	}
	lost := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: 3 * time.Second, RenewDeadline: renewDeadline, RetryPeriod: 500 * time.Millisecond,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() { close(lost) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go elector.Run(ctx)

	rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: env.Namespace},
		Spec: v1alpha1.ReleaseSpec{Chart: v1alpha1.ChartSource{Repository: "https://charts.example.invalid", Name: "app", Version: "1.0.0"}}}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	r := &controller.Reconciler{Client: c, Leading: leads}
	waitUntil(t, "the controller leads", leads)
	fail := func(reason string) string {
		t.Helper()
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(rel), rel); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteFailureForTest(t.Context(), rel, reason); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(rel), rel); err != nil {
			t.Fatal(err)
		}
		if cond := condition(rel, controller.ConditionReady); cond != nil {
			return cond.Reason
		}
		return ""
	}
	if got := fail(controller.ReasonInstallFailed); got != controller.ReasonInstallFailed {
		t.Fatalf("Ready reason %q while leading, want %s written", got, controller.ReasonInstallFailed)
	}

	// Another replica takes the Lease for a year: the controller's renewals fail.
	var l coordinationv1.Lease
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: env.Namespace, Name: lease}, &l); err != nil {
		t.Fatal(err)
	}
	now := metav1.NowMicro()
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To("another-replica"), ptr.To(int32(365*24*3600))
	l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
	if err := c.Update(t.Context(), &l); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the election is lost", func() bool {
		select {
		case <-lost:
			return true
		default:
			return false
		}
	})
	if leads() {
		t.Fatal("the controller leads after its election was lost")
	}
	if got := fail(controller.ReasonUpgradeFailed); got != controller.ReasonInstallFailed {
		t.Errorf("Ready reason %q after the lead was lost, want %s as the leader left it", got, controller.ReasonInstallFailed)
	}
}
