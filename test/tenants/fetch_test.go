package tenants_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestHungRepositoryHoldsNoWorker: Releases of one namespace on a chart repository that takes
// connections and never answers, more of them than the controller has workers and with a
// spec.timeout longer than the test, do not keep a Release of another namespace, on a
// repository that answers, from being installed and becoming Ready: their fetches are waited for
// off the workers. One with a short spec.timeout fails when it is up, saying which host did not
// answer and that it timed out.
func TestHungRepositoryHoldsNoWorker(t *testing.T) {
	hungEnv, goodEnv := testenv.New(t), testenv.New(t)
	c := releasetest.Client(t, hungEnv)
	releasetest.Deployer(t, goodEnv, "deployer")
	hung := hungRepository(t)
	good := releasetest.ServeCharts(t, berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: hello}\n",
	}))

	const hungReleases, workers = 3, 1
	for i := range hungReleases {
		rel := releaseOf(t, hungEnv.Namespace, "stuck-"+string(rune('a'+i)), hung.URL, "default", "1h")
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create(t.Context(), releaseOf(t, hungEnv.Namespace, "short", hung.URL, "default", "3s")); err != nil {
		t.Fatal(err)
	}
	runController(t, hungEnv, workers)
	if err := c.Create(t.Context(), releaseOf(t, goodEnv.Namespace, "web", good, "deployer", "1m")); err != nil {
		t.Fatal(err)
	}

	got := releasetest.WaitFor(t, c, goodEnv.Namespace, "web", "is Ready", func(rel *v1alpha1.Release) bool {
		cond := releasetest.Condition(rel, controller.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionTrue && rel.Status.Revision == 1
	})
	if got.Status.ChartVersion != "0.3.0" {
		t.Errorf("Release web: chart version %q, want 0.3.0", got.Status.ChartVersion)
	}
	host := hostOf(t, hung.URL)
	rel := releasetest.WaitFor(t, c, hungEnv.Namespace, "short", "is not Ready, its fetch timed out", func(rel *v1alpha1.Release) bool {
		cond := releasetest.Condition(rel, controller.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.ObservedGeneration == rel.Generation
	})
	cond := releasetest.Condition(rel, controller.ConditionReady)
	t.Logf("Release %s/short: Ready %s, %s: %s", hungEnv.Namespace, cond.Status, cond.Reason, cond.Message)
	if cond.Reason != controller.ReasonChartUnavailable || !strings.Contains(cond.Message, host) || !strings.Contains(cond.Message, "timed out") {
		t.Errorf("Release short: Ready is %s (%s: %q), want False (%s) naming host %s and saying it timed out",
			cond.Status, cond.Reason, cond.Message, controller.ReasonChartUnavailable, host)
	}
}

// hungRepository is a chart repository that takes every request and never answers it, until
// the test ends.
func hungRepository(t *testing.T) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // first: the handlers return, then the server closes
	return srv
}

// releaseOf is a Release of the chart web 0.3.0 of repoURL, acting as serviceAccount, with
// spec.timeout timeout.
func releaseOf(t *testing.T, ns, name, repoURL, serviceAccount, timeout string) *v1alpha1.Release {
	t.Helper()
	var rel v1alpha1.Release
	manifest := `
apiVersion: berth.dev/v1alpha1
kind: Release
metadata: {name: ` + name + `, namespace: ` + ns + `}
spec:
  serviceAccountName: ` + serviceAccount + `
  timeout: ` + timeout + `
  chart: {repository: "` + repoURL + `", name: web, version: "0.3.0"}
`
	if err := yaml.Unmarshal([]byte(manifest), &rel); err != nil {
		t.Fatal(err)
	}
	return &rel
}

// runController runs one controller for the Releases of every namespace, with workers
// reconciles at once, until the test ends.
func runController(t *testing.T, env *testenv.Env, workers int) {
	t.Helper()
	releasetest.RunController(t, env, controller.Options{
		Concurrency: workers, MetricsBindAddress: "0", CacheDir: t.TempDir(),
		Logger: logr.FromSlogHandler(slog.NewTextHandler(t.Output(), nil)),
	})
}

// hostOf is the HOST:PORT of a server's URL.
func hostOf(t *testing.T, serverURL string) string {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
