package controller_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestReleaseWatchWindowMustFit: a Release whose upgrade window does not fit in two thirds of its
// timeout (it rolls back on failure) is Stalled with WatchWindowTooLong, saying the limit, and
// nothing is released; once the window fits, the install watches for its own window and the
// Release is Ready and Healthy.
func TestReleaseWatchWindowMustFit(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	url := releasetest.ServeCharts(t, webChart(t))
	ns := env.Namespace
	rel := &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: v1alpha1.ReleaseSpec{
			ServiceAccountName: "deployer",
			Chart:              v1alpha1.ChartSource{Repository: url, Name: "web", Version: "0.3.0"},
			Timeout:            &metav1.Duration{Duration: 90 * time.Second},
			Install:            &v1alpha1.InstallSpec{WatchSpec: v1alpha1.WatchSpec{WatchFor: &metav1.Duration{Duration: 2 * time.Second}}},
			Upgrade: &v1alpha1.UpgradeSpec{RollbackOnFailure: true,
				WatchSpec: v1alpha1.WatchSpec{WatchFor: &metav1.Duration{Duration: time.Minute}}},
		},
	}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, ns, "web", "is stalled", func(rel *v1alpha1.Release) bool {
		s := condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue && rel.Status.ObservedGeneration == rel.Generation
	})
	s := condition(got, controller.ConditionStalled)
	want := "spec.upgrade.watchFor 1m0s does not fit in the timeout of 1m30s: the operation rolls back on failure and keeps the last third of its time for it, so the window must be shorter than 1m0s"
	if s.Reason != controller.ReasonWatchWindowTooLong || !strings.HasPrefix(s.Message, want) {
		t.Errorf("Stalled: %s: %s\nwant %s: %s...", s.Reason, s.Message, controller.ReasonWatchWindowTooLong, want)
	}
	if r := condition(got, controller.ConditionReady); r == nil || r.Status != metav1.ConditionFalse || r.Reason != controller.ReasonWatchWindowTooLong {
		t.Errorf("Ready: %+v", r)
	}
	berthtest.AssertNoRecords(t, env)

	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"upgrade":{"watchFor":"50s"}}}`))
	if err := c.Patch(t.Context(), &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, patch); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, ns, "web", "is installed", readyAt(1))
	if h := condition(got, controller.ConditionHealthy); h == nil || h.Status != metav1.ConditionTrue || h.Reason != controller.ReasonHealthy {
		t.Errorf("Healthy: %+v", h)
	}
	if h := got.Status.History; len(h) != 1 || h[0].Duration.Duration < 2*time.Second {
		t.Errorf("history %+v: want one install that lasted its window of 2s at least", h)
	}
}
