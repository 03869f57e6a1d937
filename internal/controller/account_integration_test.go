package controller_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestMissingServiceAccountStalls: a Release that names a ServiceAccount that does not exist is
// Stalled with reason ServiceAccountNotFound, and nothing is done as that name (no record, no
// object); once the account exists, with rights, the release is installed.
func TestMissingServiceAccountStalls(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	c := startController(t, env)
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, webChart(t)), "ghost")
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is stalled", func(rel *v1alpha1.Release) bool {
		s := condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue
	})
	s := condition(got, controller.ConditionStalled)
	if s.Reason != controller.ReasonServiceAccountNotFound || !strings.Contains(s.Message, "ServiceAccount "+env.Namespace+"/ghost") {
		t.Errorf("Stalled %s: %s; want %s naming the account", s.Reason, s.Message, controller.ReasonServiceAccountNotFound)
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
	berthtest.AssertNoRecords(t, env)

	deployer(t, env, "ghost")
	waitFor(t, c, env.Namespace, "web", "is ready once its account exists", readyAt(1))
}

// TestDefaultServiceAccount: a Release that names no account acts as the controller's
// --default-service-account, and is Stalled while that account does not exist.
func TestDefaultServiceAccount(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	installCRD(t, env)
	releasetest.RunController(t, env, controller.Options{
		Namespace: env.Namespace, MetricsBindAddress: "0", CacheDir: t.TempDir(),
		Logger:                logr.FromSlogHandler(slog.NewTextHandler(t.Output(), nil)),
		DefaultServiceAccount: "releaser",
	})
	c := startClient(t, env)
	if err := c.Create(t.Context(), smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, webChart(t)), "")); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is stalled", func(rel *v1alpha1.Release) bool {
		s := condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue
	})
	if s := condition(got, controller.ConditionStalled); s.Reason != controller.ReasonServiceAccountNotFound || !strings.Contains(s.Message, "/releaser") {
		t.Errorf("Stalled %s: %s; want %s naming releaser", s.Reason, s.Message, controller.ReasonServiceAccountNotFound)
	}
	deployer(t, env, "releaser")
	waitFor(t, c, env.Namespace, "web", "is ready as the default account", readyAt(1))
	rec := berthtest.LastRecord(t, env, "web")
	if rec.Version != 1 {
		t.Errorf("record revision %d, want 1", rec.Version)
	}
}
