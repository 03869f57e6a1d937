package tenants_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/provenance"
	"helm.sh/helm/v4/pkg/repo/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/controller/api/crds"
	"github.com/berthdev/berth/internal/controller/api/v1alpha1"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// waitTimeout bounds each wait for the controller.
const waitTimeout = 2 * time.Minute

// TestHungRepositoryHoldsNoWorker: Releases of one namespace on a chart repository that takes
// connections and never answers, more of them than the controller has workers, fail when their
// spec.timeout is up, saying which host did not answer and that it timed out; meanwhile a
// Release of another namespace, on a repository that answers, is installed and becomes Ready.
func TestHungRepositoryHoldsNoWorker(t *testing.T) {
	hungEnv, goodEnv := testenv.New(t), testenv.New(t)
	c := releaseClient(t, hungEnv)
	deployer(t, goodEnv, "deployer")
	hung := hungRepository(t)
	good := serveCharts(t, berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: hello}\n",
	}))

	const hungReleases, workers = 3, 1
	for i := range hungReleases {
		rel := releaseOf(t, hungEnv.Namespace, "stuck-"+string(rune('a'+i)), hung.URL, "default", "3s")
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	runController(t, hungEnv, workers)
	if err := c.Create(t.Context(), releaseOf(t, goodEnv.Namespace, "web", good, "deployer", "1m")); err != nil {
		t.Fatal(err)
	}

	got := waitFor(t, c, goodEnv.Namespace, "web", "is Ready", func(rel *v1alpha1.Release) bool {
		cond := condition(rel, controller.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionTrue && rel.Status.Revision == 1
	})
	if got.Status.ChartVersion != "0.3.0" {
		t.Errorf("Release web: chart version %q, want 0.3.0", got.Status.ChartVersion)
	}
	host := hostOf(t, hung.URL)
	for i := range hungReleases {
		name := "stuck-" + string(rune('a'+i))
		rel := waitFor(t, c, hungEnv.Namespace, name, "is not Ready, its fetch timed out", func(rel *v1alpha1.Release) bool {
			cond := condition(rel, controller.ConditionReady)
			return cond != nil && cond.Status == metav1.ConditionFalse && cond.ObservedGeneration == rel.Generation
		})
		cond := condition(rel, controller.ConditionReady)
		t.Logf("Release %s/%s: Ready %s, %s: %s", hungEnv.Namespace, name, cond.Status, cond.Reason, cond.Message)
		if cond.Reason != controller.ReasonChartUnavailable || !strings.Contains(cond.Message, host) || !strings.Contains(cond.Message, "timed out") {
			t.Errorf("Release %s: Ready is %s (%s: %q), want False (%s) naming host %s and saying it timed out",
				name, cond.Status, cond.Reason, cond.Message, controller.ReasonChartUnavailable, host)
		}
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

// serveCharts serves a Helm chart repository of the packaged charts (.tgz) given.
func serveCharts(t *testing.T, packages ...string) string {
	t.Helper()
	dir := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	index := repo.NewIndexFile()
	for _, p := range packages {
		ch, err := loader.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(p)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		digest, err := provenance.DigestFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := index.MustAdd(ch.Metadata, name, srv.URL, digest); err != nil {
			t.Fatal(err)
		}
	}
	index.SortEntries()
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL
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
	mgr, err := controller.NewManager(env.Config, controller.Options{
		Concurrency: workers, MetricsBindAddress: "0", CacheDir: t.TempDir(),
		Logger: logr.FromSlogHandler(slog.NewTextHandler(t.Output(), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller: %v", err)
		}
	})
}

// releaseClient installs the Release CRD (or finds it), waits until it is served, and returns a
// client of the controller's scheme.
func releaseClient(t *testing.T, env *testenv.Env) client.Client {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(crds.Release, &crd); err != nil {
		t.Fatal(err)
	}
	crdClient := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crdClient.Create(t.Context(), &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := crdClient.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("wait for CRD %s: %v", crd.Name, err)
	}
	scheme, err := controller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// deployer creates the ServiceAccount name with every right in the test's namespace, and none
// beyond it.
func deployer(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	ctx, ns := t.Context(), env.Namespace
	if _, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rbac := env.Client.RbacV1()
	if _, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits until the Release name satisfies cond, and returns it.
func waitFor(t *testing.T, c client.Client, ns, name, what string, cond func(*v1alpha1.Release) bool) *v1alpha1.Release {
	t.Helper()
	var rel v1alpha1.Release
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &rel); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(&rel), nil
	})
	if err != nil {
		out, _ := yaml.Marshal(rel.Status)
		t.Fatalf("wait until Release %s/%s %s: %v\nstatus:\n%s", ns, name, what, err, out)
	}
	return &rel
}

// condition returns a condition of rel, or nil.
func condition(rel *v1alpha1.Release, t string) *metav1.Condition {
	for i := range rel.Status.Conditions {
		if rel.Status.Conditions[i].Type == t {
			return &rel.Status.Conditions[i]
		}
	}
	return nil
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
