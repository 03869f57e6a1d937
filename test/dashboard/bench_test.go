package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/internal/dashboard"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// benchReleases is how many releases BenchmarkDashboardReleases lists.
const benchReleases = 1000

// BenchmarkDashboardReleases times the release list of berth dashboard with 1,000 releases in
// one namespace (1,400 Helm records: every fifth release has three revisions); make bench runs
// it. The records are written with berth's store, not installed, and each release's one
// ConfigMap exists, so every release is Ready. Its parts:
//
//   - api-first-page: GET /api/releases, the namespace's first page of 50;
//   - api-all-namespaces: the first page of every namespace, as the list page asks at first;
//   - api-search: the namespace's first page with q matching 100 of the releases;
//   - api-health: GET /api/health for the 50 releases of the first page, as the page asks;
//   - page-load: headless Chromium loads the list page (every namespace: the test binary's
//     cluster holds only these releases) until "1–50 of 1000" and the 50 health badges are
//     drawn. Its metrics, from the page's own clock (0 is the start of the navigation):
//     list-ms, when /api/releases was answered; health-ms, when /api/health was answered;
//     drawn-ms, when the last badge was seen drawn (the page is polled every 5 ms).
func BenchmarkDashboardReleases(b *testing.B) {
	env := testenv.New(b)
	start := time.Now()
	writeReleases(b, env, benchReleases)
	b.Logf("setup: %d releases recorded in %s", benchReleases, time.Since(start).Round(time.Millisecond))
	base := serve(b, env, dashboard.Options{}, "")
	list := func(params url.Values) releaseList {
		b.Helper()
		params.Set("context", devclusterContext)
		if !params.Has("namespace") {
			params.Set("namespace", env.Namespace)
		}
		params.Set("offset", "0")
		var page releaseList
		getJSON(b, base+"/api/releases?"+params.Encode(), &page)
		return page
	}

	// One list first, untimed: the dashboard builds its clients of the context on its first
	// request, and the API server is still busy with the writes for a moment.
	list(url.Values{})

	b.Run("api-first-page", func(b *testing.B) {
		for b.Loop() {
			if page := list(url.Values{}); page.Total != benchReleases || len(page.Items) != dashboard.DefaultPageSize {
				b.Fatalf("GET /api/releases: %d of %d releases, want %d of %d", len(page.Items), page.Total, dashboard.DefaultPageSize, benchReleases)
			}
		}
	})

	b.Run("api-all-namespaces", func(b *testing.B) {
		for b.Loop() {
			// Other namespaces may hold releases too: a run of benchmarks alone has none.
			if page := list(url.Values{"namespace": {""}}); page.Total < benchReleases || len(page.Items) != dashboard.DefaultPageSize {
				b.Fatalf("GET /api/releases of every namespace: %d of %d releases, want %d of %d or more", len(page.Items), page.Total, dashboard.DefaultPageSize, benchReleases)
			}
		}
	})

	b.Run("api-search", func(b *testing.B) {
		for b.Loop() {
			// app-01 is in the names app-0100 to app-0199 only.
			if page := list(url.Values{"q": {"app-01"}}); page.Total != 100 || len(page.Items) != dashboard.DefaultPageSize {
				b.Fatalf("GET /api/releases?q=app-01: %d of %d releases, want %d of 100", len(page.Items), page.Total, dashboard.DefaultPageSize)
			}
		}
	})

	b.Run("api-health", func(b *testing.B) {
		params := url.Values{"context": {devclusterContext}}
		for i := range dashboard.DefaultPageSize {
			params.Add("r", env.Namespace+"/"+releaseName(i))
		}
		for b.Loop() {
			var health map[string]struct{ State string }
			getJSON(b, base+"/api/health?"+params.Encode(), &health)
			if len(health) != dashboard.DefaultPageSize {
				b.Fatalf("GET /api/health: %d releases, want %d", len(health), dashboard.DefaultPageSize)
			}
			for key, h := range health {
				if h.State != "Ready" {
					b.Fatalf("GET /api/health: release %s is %s, want Ready", key, h.State)
				}
			}
		}
	})

	b.Run("page-load", func(b *testing.B) {
		p := berthtest.Browser(b)
		var list, health, drawn float64
		for b.Loop() {
			b.StopTimer()
			p.Navigate("about:blank")
			b.StartTimer()
			p.Navigate(base + "/")
			var t pageTimes
			p.Eval(pageLoaded, &t)
			if !strings.HasSuffix(t.Info, fmt.Sprintf("of %d", benchReleases)) || t.Rows != dashboard.DefaultPageSize {
				b.Fatalf("the page shows %d rows, %q; want %d rows of %d", t.Rows, t.Info, dashboard.DefaultPageSize, benchReleases)
			}
			list, health, drawn = list+t.List, health+t.Health, drawn+t.Drawn
		}
		n := float64(b.N)
		b.ReportMetric(list/n, "list-ms")
		b.ReportMetric(health/n, "health-ms")
		b.ReportMetric(drawn/n, "drawn-ms")
	})
}

// releaseList is what /api/releases answers, as far as the benchmark checks it.
type releaseList struct {
	Items []json.RawMessage `json:"items"`
	Total int               `json:"total"`
}

// pageTimes is what pageLoaded reports: the page's pager and rows, and its times in ms since
// the navigation started.
type pageTimes struct {
	Info                string
	Rows                int
	List, Health, Drawn float64
}

// pageLoaded waits, polling every 5 ms, until the release list shows its pager and every row's
// health badge, then reports when that was seen and when the page's two requests were answered.
const pageLoaded = `new Promise((resolve, reject) => {
  const deadline = performance.now() + 30000;
  const check = () => {
    const info = document.querySelector("#page-info");
    const rows = document.querySelectorAll("#release-table tbody tr").length;
    const waiting = document.querySelectorAll("#release-table td.health .spinner").length;
    if (info && rows > 0 && waiting === 0) {
      const end = (path) => Math.max(0, ...performance.getEntriesByType("resource").filter((e) => new URL(e.name).pathname === path).map((e) => e.responseEnd));
      return resolve({Info: info.textContent, Rows: rows, List: end("/api/releases"), Health: end("/api/health"), Drawn: performance.now()});
    }
    if (performance.now() > deadline) return reject(new Error("no release list with its health after 30 s: " + (info ? info.textContent : "no pager") + ", " + waiting + " badges waiting"));
    setTimeout(check, 5);
  };
  check();
})`

// getJSON GETs u and decodes its JSON answer into out, failing b on any error.
func getJSON(b *testing.B, u string, out any) {
	b.Helper()
	res, err := http.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		var e struct{ Error string }
		_ = json.NewDecoder(res.Body).Decode(&e)
		b.Fatalf("GET %s: %s: %s", u, res.Status, e.Error)
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		b.Fatalf("GET %s: decode: %v", u, err)
	}
}

func releaseName(i int) string { return fmt.Sprintf("app-%04d", i) }

// writeReleases records n releases in the test's namespace with berth's release store, as an
// install would, and creates the one ConfigMap each release's manifest holds: every fifth
// release has three revisions (two superseded), every seventh release's last one failed, and
// the charts are four.
func writeReleases(b *testing.B, env *testenv.Env, n int) {
	b.Helper()
	// A client of its own without the test client's rate limit (100 requests a second), which
	// would make the 2,400 writes take 24 s.
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	store, err := release.Open(release.DriverSecret, client, env.Namespace, release.DefaultExpansion(), nil)
	if err != nil {
		b.Fatal(err)
	}
	charts := []string{"web", "api", "worker", "cache"}
	deployed := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	var g errgroup.Group
	g.SetLimit(32)
	for i := range n {
		name := releaseName(i)
		g.Go(func() error {
			_, err := client.CoreV1().ConfigMaps(env.Namespace).Create(b.Context(), &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: name + "-config"},
				Data:       map[string]string{"color": "blue"},
			}, metav1.CreateOptions{})
			return err
		})
		revisions := 1
		if i%5 == 0 {
			revisions = 3
		}
		for v := 1; v <= revisions; v++ {
			status := release.StatusSuperseded
			if v == revisions {
				status = release.StatusDeployed
				if i%7 == 0 {
					status = release.StatusFailed
				}
			}
			c := charts[i%len(charts)]
			rel := &release.Release{
				Name:      name,
				Namespace: env.Namespace,
				Version:   v,
				Info: &release.Info{
					FirstDeployed: deployed,
					LastDeployed:  deployed.Add(time.Duration(i)*time.Minute + time.Duration(v)*time.Second),
					Status:        status,
					Description:   fmt.Sprintf("revision %d of %s", v, name),
				},
				Chart: &chart.Chart{Metadata: &chart.Metadata{
					APIVersion: chart.APIVersionV2, Name: c, Version: fmt.Sprintf("1.%d.0", v), AppVersion: fmt.Sprintf("2.%d.0", v),
				}},
				Config: map[string]any{"color": "blue"},
				Manifest: fmt.Sprintf("---\n# Source: %s/templates/config.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-config\ndata:\n  color: \"blue\"\n",
					c, name),
			}
			g.Go(func() error { return store.Create(b.Context(), rel) })
		}
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}
