package controller

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/repo/v1"

	"helm.sh/helm/v4/pkg/chart/common"
)

// TestFetchesShareConnections: the controller fetches a Release's chart at every reconcile, for
// as long as it runs; each fetch must reuse the connections the last one left idle rather than
// open its own and leave them open (a repository that never closes idle connections would
// otherwise hold one a fetch, and the controller its memory, without bound).
func TestFetchesShareConnections(t *testing.T) {
	t.Setenv("HELM_CACHE_HOME", t.TempDir())
	url, opened := serveChartRepo(t, &chartv2.Chart{
		Metadata:  &chartv2.Metadata{APIVersion: chartv2.APIVersionV2, Name: "web", Version: "0.3.0"},
		Templates: []*common.File{{Name: "templates/config.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n")}},
	})
	charts, err := NewCharts(t.TempDir(), ChartsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const fetches = 10
	var digest string
	for i := range fetches {
		loc, err := charts.locate(t.Context(), chartRef{Ref: "web", RepoURL: url, Version: "0.3.0"}, chartAccess{})
		if err != nil {
			t.Fatalf("fetch %d: %v", i+1, err)
		}
		f, err := load(loc.path, "")
		if err != nil {
			t.Fatalf("fetch %d: %v", i+1, err)
		}
		if f.chart.Name() != "web" || f.chart.Metadata.Version != "0.3.0" {
			t.Fatalf("fetch %d: chart %s %s, want web 0.3.0", i+1, f.chart.Name(), f.chart.Metadata.Version)
		}
		if digest == "" {
			digest = f.digest
		} else if f.digest != digest {
			t.Fatalf("fetch %d: digest %s, the first fetch's was %s", i+1, f.digest, digest)
		}
	}
	// One fetch after another needs one connection; a second is allowed for a server that
	// closed the first between requests.
	if n := opened(); n > 2 {
		t.Errorf("%d fetches opened %d connections to the repository, want at most 2", fetches, n)
	}
}

// serveChartRepo packages ch into a Helm repository served over HTTP until the test ends, and
// returns its URL and a count of the client connections it has accepted so far.
func serveChartRepo(t *testing.T, ch *chartv2.Chart) (string, func() int) {
	t.Helper()
	dir := t.TempDir()
	if _, err := chartutil.Save(ch, dir); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	opened := 0
	srv := httptest.NewUnstartedServer(http.FileServer(http.Dir(dir)))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			mu.Lock()
			opened++
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	index, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL, func() int {
		mu.Lock()
		defer mu.Unlock()
		return opened
	}
}
