package lifecycle

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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

// TestHelmDriverMemory keeps the release, and berth's journal of it, in the command's memory with
// HELM_DRIVER=memory, as helm does: the objects are applied, and nothing records them in the
// cluster.
func TestHelmDriverMemory(t *testing.T) {
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "keeper", lookupChart)
	t.Setenv("HELM_DRIVER", "memory")
	secrets := env.Client.CoreV1().Secrets(env.Namespace)
	w, err := secrets.Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	berthtest.MustBerth(t, env, "install", "web", chart)
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "keeper-config", metav1.GetOptions{}); err != nil {
		t.Errorf("the release's ConfigMap: %v", err)
	}
	berthtest.AssertNoRecords(t, env)
	cms, err := env.Client.CoreV1().ConfigMaps(env.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil || len(cms.Items) > 0 {
		t.Errorf("ConfigMaps labelled as records: %d (%v), want none", len(cms.Items), err)
	}
	// Every record or journal Secret written in the namespace during the install, up to a Secret
	// written after it: the journal, written and deleted within the command, would be among them.
	if _, err := secrets.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		obj, ok := ev.Object.(*corev1.Secret)
		if !ok {
			t.Fatalf("watch of Secrets: %v", ev.Object)
		}
		if obj.Name == "after" {
			break
		}
		if obj.Type != release.JournalSecretType && obj.Type != "helm.sh/release.v1" {
			continue // the chart's own
		}
		t.Errorf("Secret %s (%s) written with HELM_DRIVER=memory", obj.Name, ev.Type)
	}
}
