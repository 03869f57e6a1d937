package controller_test

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// webChart is a chart with a ConfigMap of its replicas value and a Deployment.
func webChart(t *testing.T) string {
	return berthtest.WriteChart(t, "web", map[string]string{
		"values.yaml": "replicas: 1\n",
		"templates/app.yaml": `
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {replicas: "{{ .Values.replicas }}"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: example.invalid/web}]}
`,
	})
}

// uidsOf returns the UIDs of the web chart's objects.
func uidsOf(t *testing.T, env *testenv.Env) (configMap, deployment types.UID) {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "web-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := env.Client.AppsV1().Deployments(env.Namespace).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.UID, d.UID
}

func TestReleaseAdoptsWhatHelmInstalled(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	releasetest.ServiceAccount(t, env, "deployer", releasetest.Everything)
	chart := webChart(t)
	berthtest.MustHelm(t, env, "install", "web", chart)
	if record := berthtest.LastRecord(t, env, "web"); record.Version != 1 || record.Info.Status != release.StatusDeployed {
		t.Fatalf("record after helm install: revision %d %s, want 1 deployed", record.Version, record.Info.Status)
	}
	cmUID, deployUID := uidsOf(t, env)

	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, chart)
	ctl := newController(t, env)
	ctl.start()
	if err := c.Create(t.Context(), releaseOf(t, env.Namespace, "web", repo.URL, "web", "deployer", "{replicas: 2}")); err != nil {
		t.Fatal(err)
	}
	got := releasetest.WaitFor(t, c, env.Namespace, "web", "has upgraded the release Helm installed", readyAt(2))
	if c := releasetest.Condition(got, controller.ConditionReleased); c == nil || c.Reason != controller.ReasonUpgradeSucceeded {
		t.Errorf("Released condition: %+v, want %s", c, controller.ReasonUpgradeSucceeded)
	}
	// An upgrade of Helm's revision 1, not a second install: the same objects, changed.
	history, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).History(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(history) != 2 || history[0].Info.Status != release.StatusSuperseded || history[1].Info.Status != release.StatusDeployed {
		for _, r := range history {
			t.Logf("revision %d: %s (%s)", r.Version, r.Info.Status, r.Info.Description)
		}
		t.Errorf("history: %d revisions, want revision 1 superseded and 2 deployed", len(history))
	}
	if cm, d := uidsOf(t, env); cm != cmUID || d != deployUID {
		t.Errorf("objects replaced: ConfigMap web-config UID %s then %s, Deployment web UID %s then %s", cmUID, cm, deployUID, d)
	}
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "web-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["replicas"] != "2" {
		t.Errorf("ConfigMap web-config replicas = %q, want the Release's 2", cm.Data["replicas"])
	}

	// Helm still sees it as its own, deployed at the controller's revision.
	var list []struct {
		Name, Namespace, Status, Chart string
		Revision                       int `json:"revision,string"`
	}
	out := berthtest.MustHelm(t, env, "list", "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("helm list -o json: %v\n%s", err, out)
	}
	if len(list) != 1 || list[0].Name != "web" || list[0].Status != "deployed" || list[0].Revision != 2 || list[0].Chart != "web-0.1.0" {
		t.Errorf("helm list: %+v, want web revision 2 deployed, chart web-0.1.0", list)
	}
	ctl.running()
}

// TestReleaseDoesNotReuseHelmValues adopts a release Helm installed with --set replicas=3 by a
// Release that gives no values: the Release's values are all the release's values, so the
// upgrade renders the chart's default (1), and Helm's record of revision 2 holds no values.
func TestReleaseDoesNotReuseHelmValues(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	releasetest.ServiceAccount(t, env, "deployer", releasetest.Everything)
	chart := webChart(t)
	berthtest.MustHelm(t, env, "install", "web", chart, "--set", "replicas=3")

	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, chart)
	ctl := newController(t, env)
	ctl.start()
	if err := c.Create(t.Context(), releaseOf(t, env.Namespace, "web", repo.URL, "web", "deployer", "{}")); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, env.Namespace, "web", "has upgraded the release Helm installed", readyAt(2))
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "web-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["replicas"] != "1" {
		t.Errorf("ConfigMap web-config replicas = %q, want the chart's default 1: Helm's --set replicas=3 was kept", cm.Data["replicas"])
	}
	if rec := berthtest.LastRecord(t, env, "web"); rec.Version != 2 || len(rec.Config) != 0 {
		t.Errorf("revision %d records the values %v, want revision 2 with none", rec.Version, rec.Config)
	}
	ctl.running()
}
