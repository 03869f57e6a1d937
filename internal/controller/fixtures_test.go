package controller_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// waitTimeout bounds each wait for the controller.
const waitTimeout = 2 * time.Minute

// installCRD creates the Release CRD (or finds it) and waits until it is served.
func installCRD(t *testing.T, env *testenv.Env) {
	t.Helper()
	releasetest.Client(t, env)
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
	return releasetest.RunController(t, env, o)
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
	releasetest.Deployer(t, env, name)
}

// waitFor waits until the Release name satisfies cond, and returns it.
func waitFor(t *testing.T, c client.Client, ns, name string, what string, cond func(*v1alpha1.Release) bool) *v1alpha1.Release {
	t.Helper()
	return releasetest.WaitFor(t, c, ns, name, what, cond)
}

// condition returns a condition of rel, or nil.
func condition(rel *v1alpha1.Release, t string) *metav1.Condition {
	return releasetest.Condition(rel, t)
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
