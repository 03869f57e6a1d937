package controller_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// appChart has a Deployment and a ConfigMap of its replicas value.
func appChart(t *testing.T) string {
	return berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"values.yaml": "replicas: 1\n",
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {replicas: "{{ .Values.replicas }}"}
`,
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {tier: front}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: example.invalid/web, resources: {requests: {cpu: "0.5"}}}]
`,
	})
}

// touch asks the controller to reconcile the Release now, and waits until it did.
func touch(t *testing.T, c client.Client, rel *v1alpha1.Release, value string) {
	t.Helper()
	before := reconciles(t)
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/touched":"`+value+`"}}}`))
	if err := c.Patch(t.Context(), rel, patch); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the controller reconciled the touched Release", func() bool { return reconciles(t) > before })
}

// hasDrifted says the Release's Drifted condition, for its generation, has status and reason.
func hasDrifted(status metav1.ConditionStatus, reason string) func(*v1alpha1.Release) bool {
	return func(rel *v1alpha1.Release) bool {
		c := condition(rel, controller.ConditionDrifted)
		return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == rel.Generation
	}
}

func TestReleaseDriftDetectThenCorrect(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, appChart(t)), "deployer")
	rel.Spec.Drift = &v1alpha1.DriftSpec{Mode: v1alpha1.DriftDetect}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))

	// As installed: no drift. The values the API server rewrites (cpu 0.5 is 500m, defaults) are
	// not drift.
	touch(t, c, got, "1")
	got = waitFor(t, c, env.Namespace, "web", "finds no drift", hasDrifted(metav1.ConditionFalse, controller.ReasonNoDrift))

	// Hand edits: the Deployment's replicas and a label, the ConfigMap's data.
	ctx := t.Context()
	deployments := env.Client.AppsV1().Deployments(env.Namespace)
	if _, err := deployments.Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"edited"}},"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	configMaps := env.Client.CoreV1().ConfigMaps(env.Namespace)
	if _, err := configMaps.Patch(ctx, "web-config", types.MergePatchType, []byte(`{"data":{"replicas":"7"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Deployment's third replica is waited for: a look while it starts would judge it not
	// ready (Healthy), and the next look, when it is, would write that it changed.
	waitUntil(t, "the edited Deployment has its 3 replicas", func() bool {
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == 3 && d.Status.UpdatedReplicas == 3
	})
	records := recordNames(t, env)
	touch(t, c, got, "2")
	got = waitFor(t, c, env.Namespace, "web", "says what drifted", hasDrifted(metav1.ConditionTrue, controller.ReasonDriftDetected))
	msg := condition(got, controller.ConditionDrifted).Message
	for _, want := range []string{
		"Deployment.apps/" + env.Namespace + "/web", "/spec/replicas", "/metadata/labels/tier",
		"ConfigMap/" + env.Namespace + "/web-config", "/data/replicas",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("Drifted message does not name %s: %s", want, msg)
		}
	}
	if r := condition(got, controller.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
		t.Errorf("Ready condition while drifted: %+v, want True", r)
	}
	waitForEvent(t, env, controller.ReasonDriftDetected, "/data/replicas")

	// Detection changes nothing: the edits stay, and another look writes nothing.
	dep, err := deployments.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 3 || dep.Labels["tier"] != "edited" {
		t.Errorf("detection changed the Deployment: replicas %d, tier %q", *dep.Spec.Replicas, dep.Labels["tier"])
	}
	assertReplicas(t, env, "7")
	depVersion := dep.ResourceVersion
	touch(t, c, got, "3")
	relVersion := got.ResourceVersion // as the annotation left it
	var after v1alpha1.Release
	if err := c.Get(ctx, client.ObjectKeyFromObject(got), &after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != relVersion {
		out, _ := yaml.Marshal(after.Status)
		t.Errorf("a second look at the same drift wrote the Release; status:\n%s", out)
	}
	if dep, err := deployments.Get(ctx, "web", metav1.GetOptions{}); err != nil || dep.ResourceVersion != depVersion {
		t.Errorf("a second look at the same drift wrote the Deployment (%v)", err)
	}

	// Correct, ignoring the Deployment's replicas: the label and the data are put back, the
	// replicas are left as they are, and no revision is made.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"drift":{"mode":"correct","ignore":[{"kind":"Deployment","paths":["/spec/replicas"]}]}}}`))
	if err := c.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "web", "corrects the drift", hasDrifted(metav1.ConditionFalse, controller.ReasonDriftCorrected))
	msg = condition(got, controller.ConditionDrifted).Message
	if strings.Contains(msg, "/spec/replicas") || !strings.Contains(msg, "/metadata/labels/tier") || !strings.Contains(msg, "/data/replicas") {
		t.Errorf("Drifted message after correction: %s, want the label and the data, not the ignored replicas", msg)
	}
	dep, err = deployments.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 3 || dep.Labels["tier"] != "front" {
		t.Errorf("after correction: replicas %d (want the ignored 3), tier %q (want front)", *dep.Spec.Replicas, dep.Labels["tier"])
	}
	assertReplicas(t, env, "2")
	waitForEvent(t, env, controller.ReasonDriftCorrected, "web-config")
	if got := recordNames(t, env); strings.Join(got, ",") != strings.Join(records, ",") {
		t.Errorf("correcting drift changed the release records: %v, then %v", records, got)
	}

	// A deleted object is drift too: it is made again.
	if err := configMaps.Delete(ctx, "web-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	touch(t, c, got, "4")
	waitFor(t, c, env.Namespace, "web", "makes the deleted ConfigMap again", func(rel *v1alpha1.Release) bool {
		c := condition(rel, controller.ConditionDrifted)
		return c != nil && c.Reason == controller.ReasonDriftCorrected && strings.Contains(c.Message, "web-config is missing")
	})
	assertReplicas(t, env, "2")
	if r := berthtest.LastRecord(t, env, "web"); r.Version != 1 {
		t.Errorf("release revision %d after drift corrections, want 1", r.Version)
	}
	deleteRelease(t, c, got)
}

// waitForEvent waits until an event of a Release has reason and a note that holds text.
func waitForEvent(t *testing.T, env *testenv.Env, reason, text string) {
	t.Helper()
	waitUntil(t, "an event "+reason+" names "+text, func() bool {
		list, err := env.Client.EventsV1().Events(env.Namespace).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Release" && e.Reason == reason && strings.Contains(e.Note, text) {
				return true
			}
		}
		return false
	})
}
