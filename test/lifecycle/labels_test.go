package lifecycle

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// helmMetadata is what `helm get metadata -o json` says of a release's labels.
type helmMetadata struct {
	Revision int               `json:"revision"`
	Labels   map[string]string `json:"labels"`
}

func getHelmMetadata(t *testing.T, env *testenv.Env, name string) helmMetadata {
	t.Helper()
	var m helmMetadata
	out := berthtest.MustHelm(t, env, "get", "metadata", name, "-o", "json")
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("helm get metadata: %v\n%s", err, out)
	}
	// helm shows the labels its storage sets too; only the release's own are compared.
	maps.DeleteFunc(m.Labels, func(k, _ string) bool { return slices.Contains(driver.GetSystemLabels(), k) })
	return m
}

// TestLabelsAsHelm records --labels on install, merges them on upgrade as Helm does (null
// removes one), keeps them on rollback and through an upgrade without --labels; helm reads them
// from berth's records.
func TestLabelsAsHelm(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "keeper", lookupChart)

	berthtest.MustBerth(t, env, "install", "web", chart, "--labels", "team=a,tier=web")
	berthtest.MustBerth(t, env, "upgrade", "web", chart, "--set", "replicas=2", "--labels", "tier=null,env=prod")
	berthtest.MustBerth(t, env, "upgrade", "web", chart, "--set", "replicas=3")
	want := map[string]string{"team": "a", "env": "prod"}
	if got := getHelmMetadata(t, env, "web"); !cmp.Equal(got, helmMetadata{Revision: 3, Labels: want}) {
		t.Errorf("helm get metadata after the upgrades (-want +got):\n%s", cmp.Diff(helmMetadata{Revision: 3, Labels: want}, got))
	}
	stdout, _ := berthtest.MustBerth(t, env, "list", "-q", "-l", "env=prod,team=a")
	if stdout != "web\n" {
		t.Errorf("berth list -l env=prod,team=a printed %q, want web", stdout)
	}

	berthtest.MustBerth(t, env, "rollback", "web", "1")
	if got := getHelmMetadata(t, env, "web"); !cmp.Equal(got.Labels, map[string]string{"team": "a", "tier": "web"}) {
		t.Errorf("labels after rolling back to revision 1: %v, want revision 1's", got.Labels)
	}

	// A release helm installed with labels keeps them through berth's upgrade.
	other := testenv.New(t)
	berthtest.MustHelm(t, other, "install", "fromhelm", chart, "--labels", "owner-team=b")
	berthtest.MustBerth(t, other, "upgrade", "fromhelm", chart, "--set", "replicas=2")
	if got := getHelmMetadata(t, other, "fromhelm"); !cmp.Equal(got.Labels, map[string]string{"owner-team": "b"}) {
		t.Errorf("helm's release after berth's upgrade: labels %v, want owner-team=b", got.Labels)
	}

	// Labels Helm's storage keeps for itself are refused before anything changes.
	if _, _, err := berthtest.Berth(t, env, "upgrade", "web", chart, "--labels", "owner=me"); err == nil {
		t.Error("upgrade with the reserved label owner succeeded")
	}
	if got := getHelmMetadata(t, env, "web"); got.Revision != 4 {
		t.Errorf("a refused upgrade recorded revision %d, want 4 left as it was", got.Revision)
	}
}
