package controller_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
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

// installCRD creates the Release CRD (or finds it) and waits until it is served.
func installCRD(t *testing.T, env *testenv.Env) {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(crds.Release, &crd); err != nil {
		t.Fatal(err)
	}
	c := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := c.Create(t.Context(), &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := c.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("wait for CRD %s: %v", crd.Name, err)
	}
}

// startController runs the controller for the test's namespace until the test ends, and returns
// a client of the controller's scheme.
func startController(t *testing.T, env *testenv.Env) client.Client {
	t.Helper()
	installCRD(t, env)
	runController(t, env)
	return startClient(t, env)
}

// startClient returns a client of the controller's scheme.
func startClient(t *testing.T, env *testenv.Env) client.Client {
	t.Helper()
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

// runController runs a controller for the test's namespace until stop is called or the test
// ends; with reconciles it reconciles that many Releases at once.
func runController(t *testing.T, env *testenv.Env, reconciles ...int) (stop func()) {
	t.Helper()
	o := controller.Options{
		Namespace: env.Namespace, MetricsBindAddress: "0", CacheDir: t.TempDir(),
		Logger: logr.FromSlogHandler(slog.NewTextHandler(t.Output(), nil)),
	}
	if len(reconciles) > 0 {
		o.Concurrency = reconciles[0]
	}
	return runControllerWith(t, env, o)
}

// runControllerWith runs a controller with options o until stop is called or the test ends.
func runControllerWith(t *testing.T, env *testenv.Env, o controller.Options) (stop func()) {
	t.Helper()
	mgr, err := controller.NewManager(env.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("controller: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// serveCharts serves a Helm chart repository of the packaged charts (.tgz) given, each with its
// provenance file (.tgz.prov) when it has one.
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
		// A provenance file beside the package is served beside it.
		if prov, err := os.ReadFile(p + ".prov"); err == nil {
			if err := os.WriteFile(filepath.Join(dir, name+".prov"), prov, 0o644); err != nil {
				t.Fatal(err)
			}
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

// webChart is a chart with a ConfigMap of its replicas value and a pre-delete hook Job left in
// place once it succeeded.
func webChart(t *testing.T) string {
	return berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"values.yaml": "replicas: 1\n",
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {replicas: "{{ .Values.replicas }}"}
`,
		"templates/drain.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: web-drain
  annotations: {helm.sh/hook: pre-delete}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: drain, image: example.invalid/drain}]
`,
	})
}

// deployer creates the ServiceAccount name with every right in the test's namespace, and none
// beyond it.
func deployer(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	ctx := t.Context()
	ns := env.Namespace
	rbac := env.Client.RbacV1()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, serviceAccount(name), metav1.CreateOptions{}))
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}
	must(rbac.Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}, metav1.CreateOptions{}))
	must(rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   subject,
	}, metav1.CreateOptions{}))
}

// waitFor waits until the Release name satisfies cond, and returns it.
func waitFor(t *testing.T, c client.Client, ns, name string, what string, cond func(*v1alpha1.Release) bool) *v1alpha1.Release {
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

// readyAt says the Release is Ready for its current generation at revision.
func readyAt(revision int) func(*v1alpha1.Release) bool {
	return func(rel *v1alpha1.Release) bool {
		c := condition(rel, controller.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && rel.Status.ObservedGeneration == rel.Generation &&
			rel.Status.Revision == revision
	}
}

// waitUntil waits until cond holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("wait until %s: %v", what, err)
	}
}

func serviceAccount(name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
