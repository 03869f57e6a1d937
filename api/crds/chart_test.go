package crds_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/api/crds"
	"github.com/berthdev/berth/internal/testenv"
)

// TestChartCRDIsCurrent compares the berth-controller chart's copy of the Release CRD with the
// generated one: a CRD regenerated without `make generate` copying it fails here.
func TestChartCRDIsCurrent(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "charts/berth-controller/crds/berth.dev_releases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(crds.Release), string(got)); diff != "" {
		t.Errorf("charts/berth-controller/crds/berth.dev_releases.yaml differs from api/crds/berth.dev_releases.yaml: run make generate (-generated +chart):\n%s", diff)
	}
}
