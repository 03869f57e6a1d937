package lifecycle

import (
	"testing"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestHelmMaxHistory: HELM_MAX_HISTORY bounds the revisions upgrade and rollback keep, as in
// Helm, and --history-max overrides it. (It sets an environment variable: not in parallel.)
func TestHelmMaxHistory(t *testing.T) {
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "keeper", lookupChart)
	t.Setenv("HELM_MAX_HISTORY", "2")
	revisions := func() int {
		t.Helper()
		h, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).History(t.Context(), "web")
		if err != nil {
			t.Fatal(err)
		}
		return len(h)
	}
	berthtest.MustBerth(t, env, "install", "web", chart)
	for _, replicas := range []string{"2", "3", "4"} {
		berthtest.MustBerth(t, env, "upgrade", "web", chart, "--set", "replicas="+replicas)
	}
	if n := revisions(); n != 2 {
		t.Errorf("after three upgrades with HELM_MAX_HISTORY=2: %d revisions kept, want 2", n)
	}
	berthtest.MustBerth(t, env, "rollback", "web")
	if n := revisions(); n != 2 {
		t.Errorf("after a rollback with HELM_MAX_HISTORY=2: %d revisions kept, want 2", n)
	}
	berthtest.MustBerth(t, env, "upgrade", "web", chart, "--set", "replicas=5", "--history-max", "0")
	if n := revisions(); n != 3 {
		t.Errorf("after an upgrade with --history-max 0: %d revisions kept, want 3", n)
	}
}
