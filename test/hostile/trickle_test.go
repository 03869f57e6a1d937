package hostile_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/test/releasetest"
)

// trickleRepository serves a chart repository of the web chart whose files named slow (by their
// extension: ".yaml" for the index, ".tgz" for the chart) are sent a byte every 5 seconds until
// the client goes; the others at once.
func trickleRepository(t *testing.T, chartPath, slow string) string {
	t.Helper()
	dir := t.TempDir()
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if path.Ext(r.URL.Path) != slow {
			files.ServeHTTP(w, r)
			return
		}
		data, err := os.ReadFile(filepath.Join(dir, path.Clean(r.URL.Path)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.WriteHeader(http.StatusOK)
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for _, b := range data {
			if _, err := w.Write([]byte{b}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	}))
	// Each transfer is held until the test ends; Close would wait for them.
	srv.Config.SetKeepAlivesEnabled(false)
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	releasetest.WriteRepository(t, dir, srv.URL, chartPath)
	return srv.URL
}

// TestTrickleRepositories: a tenant's twelve Releases take their chart from repositories that send
// a byte every 5 seconds, six their index and six their chart. The namespace holds at most its
// share of the fetches, each ended once its rate is below the minimum and named; another
// namespace's Release, on a repository that answers at once, is Ready as quickly as ever.
func TestTrickleRepositories(t *testing.T) {
	web := namedChart(t)
	env, c, p, q := attacked(t)

	hosts := map[string]string{}
	for i := range 12 {
		slow := ".yaml"
		if i%2 == 1 {
			slow = ".tgz"
		}
		repoURL := trickleRepository(t, web, slow)
		u, err := url.Parse(repoURL)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("trickle-%d", i)
		hosts[name] = u.Host
		rel := sizesRelease(p, env.Namespace, name, repoURL, "")
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	q.bystander(t)

	for name, host := range hosts {
		cond := sizesNotReady(t, c, env.Namespace, name)
		for _, want := range []string{"host " + host, "below the minimum of 1024 bytes/s"} {
			if cond.Reason != controller.ReasonChartUnavailable || !strings.Contains(cond.Message, want) {
				t.Errorf("Release %s: %s %q, want %s saying %q", name, cond.Reason, cond.Message, controller.ReasonChartUnavailable, want)
			}
		}
	}
}
