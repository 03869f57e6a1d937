package controller_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/releasetest"
)

// TestDriftCorrectionHoldsTheLease: drift is corrected only while the controller holds the
// release's lease. While another operation holds it (and renews it), nothing is put back and the
// Drifted condition names the holder; once it is given back, the drift is corrected.
func TestDriftCorrectionHoldsTheLease(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, appChart(t)), "deployer")
	rel.Spec.Drift = &v1alpha1.DriftSpec{Mode: v1alpha1.DriftCorrect}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))

	leases := release.NewLeases(env.Client.CoordinationV1(), env.Namespace)
	leases.Duration = 3 * time.Second // renewed every second
	lease, err := leases.Acquire(t.Context(), "web", release.Holder{Who: "alice@laptop", Host: "laptop", PID: 1, Command: "berth upgrade web"})
	if err != nil {
		t.Fatal(err)
	}
	stop := lease.Keep(func(err error) { t.Errorf("the other operation lost its lease: %v", err) })
	defer stop()

	ctx := t.Context()
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Patch(ctx, "web-config", types.MergePatchType, []byte(`{"data":{"replicas":"7"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	touch(t, c, got, "held")
	got = waitFor(t, c, env.Namespace, "web", "says the correction waits for the lease", hasDrifted(metav1.ConditionTrue, controller.ReasonDriftCorrectionFailed))
	if msg := condition(got, controller.ConditionDrifted).Message; !strings.Contains(msg, "alice@laptop") {
		t.Errorf("Drifted message while another operation holds the release: %s, want it named", msg)
	}
	assertReplicas(t, env, "7")

	stop()
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	touch(t, c, got, "free")
	waitFor(t, c, env.Namespace, "web", "corrects the drift", hasDrifted(metav1.ConditionFalse, controller.ReasonDriftCorrected))
	assertReplicas(t, env, "2")
	if _, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(ctx, release.LeaseKey("web"), metav1.GetOptions{}); err == nil {
		t.Error("the controller kept the lease after the correction")
	}
	deleteRelease(t, c, got)
}
