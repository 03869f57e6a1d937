package controller_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// testedChart has a test that passes, and one that fails when values say so.
func testedChart(t *testing.T) string {
	return berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"values.yaml": "replicas: 1\nbroken: false\n",
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {replicas: "{{ .Values.replicas }}"}
`,
		"templates/tests.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: web-smoke
  annotations: {helm.sh/hook: test, devcluster.berth.dev/outcome: succeed}
spec:
  restartPolicy: Never
  containers: [{name: smoke, image: example.invalid/smoke}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: web-check
  annotations: {helm.sh/hook: test, helm.sh/hook-weight: "1"}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {devcluster.berth.dev/outcome: {{ if .Values.broken }}fail{{ else }}succeed{{ end }}}
    spec:
      restartPolicy: Never
      containers: [{name: check, image: example.invalid/check}]
`,
	})
}

func TestReleaseTestsRunAfterEachInstallAndUpgrade(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, testedChart(t)), "deployer")
	rel.Spec.Test = &v1alpha1.TestSpec{Enable: true}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}

	// Installed, then tested: both tests passed, and the record says so.
	got := waitFor(t, c, env.Namespace, "web", "is installed and tested", func(rel *v1alpha1.Release) bool {
		c := condition(rel, controller.ConditionTested)
		return readyAt(1)(rel) && c != nil && c.Status == metav1.ConditionTrue
	})
	tested := condition(got, controller.ConditionTested)
	if tested.Reason != controller.ReasonTestSucceeded || !strings.Contains(tested.Message, "web-smoke") || !strings.Contains(tested.Message, "web-check") {
		t.Errorf("Tested condition: %s: %s, want %s naming both tests", tested.Reason, tested.Message, controller.ReasonTestSucceeded)
	}
	if h := berthtest.RecordedHook(t, berthtest.LastRecord(t, env, "web"), "web-check"); h.LastRun.Phase != "Succeeded" {
		t.Errorf("recorded run of test web-check: %q, want Succeeded", h.LastRun.Phase)
	}

	// Upgraded into a failing test: not Ready, the test named with its logs.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"values":{"broken":true}}}`))
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "web", "is upgraded and its test failed", func(rel *v1alpha1.Release) bool {
		c := condition(rel, controller.ConditionTested)
		return rel.Status.Revision == 2 && c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == rel.Generation
	})
	if c := condition(got, controller.ConditionTested); c.Reason != controller.ReasonTestFailed || !strings.Contains(c.Message, "web-check") {
		t.Errorf("Tested condition: %s: %s, want %s naming web-check", c.Reason, c.Message, controller.ReasonTestFailed)
	}
	if r := condition(got, controller.ConditionReady); r == nil || r.Status != metav1.ConditionFalse || r.Reason != controller.ReasonTestFailed {
		t.Errorf("Ready condition: %+v, want False with reason %s", r, controller.ReasonTestFailed)
	}
	// Its logs can print the values: the controller shows them only with --status-chart-output.
	if b := got.Status.Blockers; len(b) != 1 || b[0].Kind != "hook" || !strings.Contains(b[0].Object, "web-check") || b[0].LogTail != "" {
		t.Errorf("blockers: %+v, want the test web-check without its logs", b)
	}
	if c := condition(got, controller.ConditionReleased); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Released condition: %+v, want True: the upgrade itself succeeded", c)
	}
	t.Logf("blockers after the failed test: %+v", got.Status.Blockers)
	waitForEvent(t, env, controller.ReasonTestFailed, "web-check")

	// Not run again until the next install or upgrade: another look changes nothing.
	job, err := env.Client.BatchV1().Jobs(env.Namespace).Get(t.Context(), "web-check", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	touch(t, c, got, "1")
	var after v1alpha1.Release
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(got), &after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != got.ResourceVersion {
		t.Errorf("a look at the Release whose test failed wrote it again")
	}
	if again, err := env.Client.BatchV1().Jobs(env.Namespace).Get(t.Context(), "web-check", metav1.GetOptions{}); err != nil || again.UID != job.UID {
		t.Errorf("the failed test ran again without an upgrade (%v)", err)
	}
	if r := berthtest.LastRecord(t, env, "web"); r.Version != 2 {
		t.Errorf("revision %d, want 2", r.Version)
	}

	// Fixed by the next upgrade: tested again, Ready.
	patch = client.RawPatch(types.MergePatchType, []byte(`{"spec":{"values":{"broken":false}}}`))
	if err := c.Patch(t.Context(), &after, patch); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "web", "is upgraded and tested", func(rel *v1alpha1.Release) bool {
		c := condition(rel, controller.ConditionTested)
		return readyAt(3)(rel) && c != nil && c.Status == metav1.ConditionTrue
	})
	if len(got.Status.Blockers) != 0 {
		t.Errorf("blockers once the tests pass: %+v", got.Status.Blockers)
	}
	deleteRelease(t, c, got)
}
