package lifecycle

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestHelmDriverConfigMap keeps the release in ConfigMaps with HELM_DRIVER=configmap, as helm
// does: helm with the same driver lists and upgrades it, and no Secret records it. (It sets an
// environment variable, so it does not run in parallel.)
func TestHelmDriverConfigMap(t *testing.T) {
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "keeper", lookupChart)
	t.Setenv("HELM_DRIVER", "configmap")

	berthtest.MustBerth(t, env, "install", "web", chart)
	if got := berthtest.MustHelm(t, env, "list", "-q"); got != "web\n" {
		t.Errorf("helm list with HELM_DRIVER=configmap printed %q, want web", got)
	}
	berthtest.MustHelm(t, env, "upgrade", "web", chart, "--set", "replicas=2")
	berthtest.MustBerth(t, env, "upgrade", "web", chart, "--set", "replicas=3")
	history, err := release.NewConfigMapStore(env.Client.CoreV1(), env.Namespace).History(t.Context(), "web")
	if err != nil || len(history) != 3 {
		t.Fatalf("ConfigMap records of web: %d revisions (%v), want 3", len(history), err)
	}
	cms, err := env.Client.CoreV1().ConfigMaps(env.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
	if err != nil || len(cms.Items) != 3 {
		t.Errorf("ConfigMaps labelled as web's records: %d (%v), want 3", len(cms.Items), err)
	}
	berthtest.AssertNoRecords(t, env) // no Secret records

	stdout, _ := berthtest.MustBerth(t, env, "history", "web", "-o", "json")
	if strings.Count(stdout, `"revision"`) != 3 {
		t.Errorf("berth history with HELM_DRIVER=configmap:\n%s", stdout)
	}
	berthtest.MustBerth(t, env, "uninstall", "web")
	if got := berthtest.MustHelm(t, env, "list", "-q"); got != "" {
		t.Errorf("helm list after berth uninstall printed %q", got)
	}
}

func TestHelmDriverUnknown(t *testing.T) {
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "keeper", lookupChart)
	t.Setenv("HELM_DRIVER", "floppy")
	_, _, err := berthtest.Berth(t, env, "install", "web", chart)
	if err == nil || !strings.Contains(err.Error(), `"floppy"`) {
		t.Errorf("install with HELM_DRIVER=floppy: error %v, want the driver named", err)
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "keeper-config")
}
