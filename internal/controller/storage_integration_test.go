package controller_test

import (
	"log/slog"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/releasetest"
)

// TestReleaseOnTheConfigMapDriver: a controller told HELM_DRIVER=configmap keeps a Release's
// records in ConfigMaps, as helm's configmap driver writes and reads them, through install,
// upgrade and uninstall, and writes no record Secret.
func TestReleaseOnTheConfigMapDriver(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	releasetest.RunController(t, env, controller.Options{
		Namespace: env.Namespace, MetricsBindAddress: "0", CacheDir: t.TempDir(),
		Logger:        logr.FromSlogHandler(slog.NewTextHandler(t.Output(), nil)),
		StorageDriver: release.DriverConfigMap,
	})
	c := startClient(t, env)
	deployer(t, env, "deployer")
	env.Apply(t, smallestReleaseYAML(env.Namespace, releasetest.ServeCharts(t, webChart(t)), "deployer"))
	got := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))

	helm := driver.NewConfigMaps(env.Client.CoreV1().ConfigMaps(env.Namespace))
	helmReads := func(version int, want release.Status) {
		t.Helper()
		r, err := helm.Get(release.Key("web", version))
		if err != nil {
			t.Fatalf("helm's configmap driver reads revision %d: %v", version, err)
		}
		rel, ok := r.(*release.Release)
		if !ok || rel.Version != version || rel.Info.Status != want {
			t.Errorf("helm's configmap driver read revision %d as %+v, want %s", version, r, want)
		}
		cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), release.Key("web", version), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l := cm.Labels; l["owner"] != "helm" || l["name"] != "web" || l["status"] != string(want) {
			t.Errorf("ConfigMap %s labels %v, want owner=helm name=web status=%s", cm.Name, l, want)
		}
	}
	helmReads(1, release.StatusDeployed)
	if got := recordNames(t, env); len(got) > 0 {
		t.Errorf("record Secrets written with the configmap driver: %v", got)
	}

	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"values":{"replicas":3}}}`))
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "web", "is upgraded", readyAt(2))
	helmReads(1, release.StatusSuperseded)
	helmReads(2, release.StatusDeployed)
	assertReplicas(t, env, "3")
	if got := recordNames(t, env); len(got) > 0 {
		t.Errorf("record Secrets written with the configmap driver: %v", got)
	}

	deleteRelease(t, c, got)
	if left, err := helm.Query(map[string]string{"name": "web", "owner": "helm"}); err == nil || len(left) > 0 {
		t.Errorf("records left after the Release was deleted: %d (%v)", len(left), err)
	}
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Get(t.Context(), release.JournalKey("web"), metav1.GetOptions{}); err == nil {
		t.Errorf("journal %s left after the Release was deleted", release.JournalKey("web"))
	}
}
