package controller_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestRequireVerifiedRefusesUnverifiedCharts: a controller that requires verification refuses a
// Release that does not ask for it (VerificationRequired, Stalled), and releases nothing of it.
func TestRequireVerifiedRefusesUnverifiedCharts(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	releasetest.RunController(t, env, controller.Options{
		Namespace: env.Namespace, MetricsBindAddress: "0", CacheDir: t.TempDir(), RequireVerified: true,
		Logger: logr.FromSlogHandler(slog.NewTextHandler(t.Output(), nil)),
	})
	c := startClient(t, env)
	deployer(t, env, "deployer")
	if err := c.Create(t.Context(), smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, webChart(t)), "deployer")); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is refused for its unverified chart", notReadyWith(controller.ReasonVerificationRequired))
	if msg := condition(got, controller.ConditionReady).Message; !strings.Contains(msg, "spec.chart.verify") {
		t.Errorf("Ready message %q does not say what to set", msg)
	}
	if s := condition(got, controller.ConditionStalled); s == nil || s.Status != metav1.ConditionTrue {
		t.Errorf("Stalled = %v, want True", s)
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
	berthtest.AssertNotRecorded(t, env, "web")
}
