package lifecycle

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// selectorChart is a chart whose Deployment selects its Pods by the label app=.Values.app, and
// whose ConfigMap says the same.
var selectorChart = map[string]string{
	"values.yaml": "app: one\n",
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Values.app }}}}
  template:
    metadata:
      labels: {app: {{ .Values.app }}}
      annotations: {devcluster.berth.dev/start: "0s"}
    spec: {containers: [{name: app, image: example.invalid/app}]}
`,
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: web
data:
  app: {{ .Values.app }}
`,
}

// liveDeployment returns the Deployment web.
func liveDeployment(t *testing.T, env *testenv.Env) *appsv1.Deployment {
	t.Helper()
	d, err := env.Client.AppsV1().Deployments(env.Namespace).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestImmutableSelectorChange upgrades a release to a Deployment selector of another label: the
// API server refuses to change it, so the upgrade is refused with nothing changed, naming the
// Deployment and the field and suggesting --force-replace; with --force-replace, berth diff
// says the Deployment is replaced, and the upgrade deletes it and creates it again.
func TestImmutableSelectorChange(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "web", selectorChart)
	berthtest.MustBerth(t, env, "install", "web", chart, "--wait")
	installed := liveDeployment(t, env)

	_, _, err := berthtest.Berth(t, env, "upgrade", "web", chart, "--set", "app=two", "--wait")
	if err == nil {
		t.Fatal("upgrade succeeded, want the selector change refused")
	}
	for _, want := range []string{"Deployment.apps/" + env.Namespace + "/web", "spec.selector", "immutable", "nothing was changed", "--force-replace"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if d := liveDeployment(t, env); d.UID != installed.UID || d.ResourceVersion != installed.ResourceVersion {
		t.Errorf("Deployment web changed (UID %s resourceVersion %s, was %s %s)", d.UID, d.ResourceVersion, installed.UID, installed.ResourceVersion)
	}
	assertConfigMapApp(t, env, "one")
	if rec := berthtest.LastRecord(t, env, "web"); rec.Version != 1 {
		t.Errorf("last record is revision %d (%s), want revision 1 alone", rec.Version, rec.Info.Status)
	}

	out, _ := berthtest.MustBerth(t, env, "diff", "upgrade", "web", chart, "--set", "app=two", "--force-replace")
	for _, want := range []string{"Deployment.apps/" + env.Namespace + "/web (replaced", "app: two"} {
		if !strings.Contains(out, want) {
			t.Errorf("berth diff upgrade --force-replace does not show %q:\n%s", want, out)
		}
	}

	berthtest.MustBerth(t, env, "upgrade", "web", chart, "--set", "app=two", "--force-replace", "--wait")
	replaced := liveDeployment(t, env)
	if replaced.UID == installed.UID {
		t.Errorf("Deployment web kept its UID %s, want it created again", replaced.UID)
	}
	if got := replaced.Spec.Selector.MatchLabels["app"]; got != "two" {
		t.Errorf("Deployment web selects app=%s, want app=two", got)
	}
	assertConfigMapApp(t, env, "two")
	if rec := berthtest.LastRecord(t, env, "web"); rec.Version != 2 || rec.Info.Status != "deployed" {
		t.Errorf("last record is revision %d (%s), want revision 2 deployed", rec.Version, rec.Info.Status)
	}
}

func assertConfigMapApp(t *testing.T, env *testenv.Env, want string) {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil || cm.Data["app"] != want {
		t.Errorf("ConfigMap web: %v %v, want app %s", cm.Data, err, want)
	}
}
