package crds_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/api/crds"
	"github.com/berthdev/berth/internal/testenv"
)

// TestChartCRDIsCurrent compares the berth-controller chart's copies of the CRDs with the
// generated ones: a CRD regenerated without `make generate` copying it fails here.
func TestChartCRDIsCurrent(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][]byte{"berth.dev_releases.yaml": crds.Release, "berth.dev_rollouts.yaml": crds.Rollout} {
		got, err := os.ReadFile(filepath.Join(root, "charts/berth-controller/crds", file))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("charts/berth-controller/crds/%s differs from api/crds/%s: run make generate (-generated +chart):\n%s", file, file, diff)
		}
	}
}
