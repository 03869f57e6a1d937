package controller_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// watchedChart is a Deployment of one replica named after the release, and a ConfigMap. With
// crash=true, its Pods crash-loop (CrashLoopBackOff, their restart count rising) run after they
// are Ready, as the local control plane simulates them, each container writing a log that holds
// a value; version changes the pod template, so that an upgrade rolls out new Pods.
var watchedChart = map[string]string{
	"values.yaml": "version: 1\ncrash: false\nrun: 20s\n",
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
      annotations:
        version: {{ .Values.version | quote }}
        {{- if .Values.crash }}
        devcluster.berth.dev/outcome: crashloop
        devcluster.berth.dev/run: {{ .Values.run | quote }}
        devcluster.berth.dev/log: "panic: password=hunter2 is refused"
        {{- end }}
    spec: {containers: [{name: app, image: example.invalid/app}]}
`,
	"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\ndata:\n  version: {{ .Values.version | quote }}\n",
}

// helmRevision is a revision as helm history -o json prints it.
type helmRevision struct {
	Revision    int    `json:"revision"`
	Status      string `json:"status"`
	Description string `json:"description"`
}

// TestControllerWatchWindow is scenario W1 through the controller, and what follows a window.
//
// Release web is upgraded to Pods that crash-loop twenty seconds after they are Ready, with
// spec.upgrade.watchFor 1m and rollbackOnFailure: while the window runs the Release says it is
// watching; then it is Ready=False with reason Degraded, naming the Deployment and its Pod and
// saying it was rolled back, with an Event Degraded, status.revision 3, and Helm's history
// showing revision 2 failed and revision 3, its rollback, deployed; nothing of the Pods' logs
// is in its status or Events.
//
// Release steady is installed with a window of 5s that its Pods pass, and they crash-loop thirty
// seconds after they are Ready: after the window, the periodic check turns Healthy False,
// reason Degraded, naming the Deployment, with one Event Degraded, and the controller does not
// act: the Release stays Ready at revision 1.
func TestControllerWatchWindow(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	ns := env.Namespace
	chart := berthtest.WriteChart(t, "watched", watchedChart)
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, chart)
	releasetest.Deployer(t, env, "deployer")
	ctl := newController(t, env)
	ctl.start()

	web := releaseOf(t, ns, "web", repo.URL, "watched", "deployer", "{}")
	web.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Minute}
	web.Spec.Upgrade = &v1alpha1.UpgradeSpec{RollbackOnFailure: true,
		WatchSpec: v1alpha1.WatchSpec{WatchFor: &metav1.Duration{Duration: time.Minute}}}
	if err := c.Create(t.Context(), web); err != nil {
		t.Fatal(err)
	}
	steady := releaseOf(t, ns, "steady", repo.URL, "watched", "deployer", `{crash: true, run: 30s}`)
	steady.Spec.Interval = &metav1.Duration{Duration: 10 * time.Second}
	steady.Spec.Install = &v1alpha1.InstallSpec{WatchSpec: v1alpha1.WatchSpec{WatchFor: &metav1.Duration{Duration: 5 * time.Second}}}
	if err := c.Create(t.Context(), steady); err != nil {
		t.Fatal(err)
	}

	got := releasetest.WaitFor(t, c, ns, "web", "is installed", readyAt(1))
	got.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"version": 2, "crash": true, "run": "20s"}`)}
	if err := c.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, ns, "web", "watches revision 2", func(rel *v1alpha1.Release) bool {
		r := releasetest.Condition(rel, controller.ConditionReconciling)
		return r != nil && r.Message == "revision 2 is Ready; watching its objects for 1m0s" && strings.HasPrefix(rel.Status.CurrentStep, "watch/2")
	})
	got = releasetest.WaitFor(t, c, ns, "web", "degrades", func(rel *v1alpha1.Release) bool {
		r := releasetest.Condition(rel, controller.ConditionReady)
		return r != nil && r.Status == metav1.ConditionFalse && rel.Status.LastAttemptedGeneration == rel.Generation &&
			releasetest.Condition(rel, controller.ConditionReconciling) == nil
	})
	ready := releasetest.Condition(got, controller.ConditionReady)
	if ready.Reason != controller.ReasonDegraded {
		t.Fatalf("Ready is False with reason %s, want %s: %s", ready.Reason, controller.ReasonDegraded, ready.Message)
	}
	for _, want := range []string{"revision 2 of release web degraded in its watch window: Deployment.apps/" + ns + "/web: Pod web-",
		"CrashLoopBackOff", "rolled back: the release is back on revision 1 (recorded as revision 3)"} {
		if !strings.Contains(ready.Message, want) {
			t.Errorf("Ready's message does not say %q: %s", want, ready.Message)
		}
	}
	if s := releasetest.Condition(got, controller.ConditionStalled); s == nil || s.Reason != controller.ReasonDegraded {
		t.Errorf("Stalled: %+v, want reason %s", s, controller.ReasonDegraded)
	}
	if got.Status.Revision != 3 {
		t.Errorf("status.revision %d, want 3, the rollback's", got.Status.Revision)
	}
	if len(got.Status.Blockers) != 1 || got.Status.Blockers[0].Kind != "degraded" || got.Status.Blockers[0].Object != "Deployment.apps/"+ns+"/web" {
		t.Errorf("blockers: %+v, want the Deployment, degraded", got.Status.Blockers)
	}
	status, err := json.Marshal(got.Status)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(status), "hunter2") {
		t.Errorf("the status holds a Pod's log, which the controller shows only with --status-chart-output:\n%s", status)
	}
	waitForEvent(t, env, controller.ReasonDegraded, "revision 2 of release web degraded in its watch window")

	var history []helmRevision
	if err := json.Unmarshal([]byte(berthtest.MustHelm(t, env, "history", "web", "-o", "json")), &history); err != nil {
		t.Fatal(err)
	}
	want := []helmRevision{
		{1, "superseded", "Install complete"},
		{2, "failed", `Upgrade "web" failed: revision 2 degraded in its watch window: Deployment.apps/` + ns + "/web: "},
		{3, "deployed", "Rollback to 1: revision 2 degraded in its watch window: Deployment.apps/" + ns + "/web: "},
	}
	if len(history) != len(want) {
		t.Fatalf("helm history web: %+v, want %+v", history, want)
	}
	for i, w := range want {
		if h := history[i]; h.Revision != w.Revision || h.Status != w.Status || !strings.HasPrefix(h.Description, w.Description) {
			t.Errorf("helm history web, entry %d: %+v, want %+v (description: its start)", i, h, w)
		}
	}

	// steady passed its window long ago; its Pods crash-loop from thirty seconds after Ready.
	got = releasetest.WaitFor(t, c, ns, "steady", "turns unhealthy", func(rel *v1alpha1.Release) bool {
		h := releasetest.Condition(rel, controller.ConditionHealthy)
		return h != nil && h.Status == metav1.ConditionFalse
	})
	h := releasetest.Condition(got, controller.ConditionHealthy)
	if h.Reason != controller.ReasonDegraded || !strings.Contains(h.Message, "Deployment.apps/"+ns+"/steady is not ready") {
		t.Errorf("Healthy: %s: %s", h.Reason, h.Message)
	}
	if !isReady(got) || got.Status.Revision != 1 || len(got.Status.History) != 1 {
		t.Errorf("the controller acted on an unhealthy release: Ready %+v, revision %d, history %+v",
			releasetest.Condition(got, controller.ConditionReady), got.Status.Revision, got.Status.History)
	}
	waitForEvent(t, env, controller.ReasonDegraded, "1 object(s) of revision 1 are not ready: Deployment.apps/"+ns+"/steady")
	ctl.running()
}
