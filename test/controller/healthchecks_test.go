package controller_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// servedBeacons creates the Beacon CRD in a group of the test's own, waits until its kind is
// served, and returns the group.
func servedBeacons(t *testing.T, env *testenv.Env) string {
	t.Helper()
	group := "health-" + berthtest.Suffix(env) + ".example.com"
	crds := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	env.Apply(t, fmt.Sprintf(berthtest.BeaconCRD, group))
	t.Cleanup(func() {
		if err := crds.Delete(context.Background(), "beacons."+group, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete CustomResourceDefinition beacons.%s: %v", group, err)
		}
	})
	beacons := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "beacons"}).Namespace(env.Namespace)
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, releasetest.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := beacons.List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("wait until Beacons are served: %v", err)
	}
	return group
}

// setBeaconPhase writes status.phase of the Beacon name, and returns the resourceVersion of the
// write.
func setBeaconPhase(t *testing.T, env *testenv.Env, group, name, phase string) uint64 {
	t.Helper()
	out, err := env.Resource(t, group+"/v1", "Beacon").Patch(t.Context(), name, types.MergePatchType,
		[]byte(`{"status":{"phase":"`+phase+`"}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("set the phase of Beacon %s: %v", name, err)
	}
	rv, err := strconv.ParseUint(out.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

// TestReleaseHealthChecksJudgeUnannotatedObjects releases, through the controller, a chart whose
// custom resource (a Beacon) has no status and no readiness annotation, with spec.healthChecks
// for Beacons: the release is deployed only once the Beacon's current expression holds; it fails
// as soon as its failed expression does, long before spec.timeout; and an expression that is
// not CEL makes the Release Stalled with InvalidHealthCheck, releasing nothing.
func TestReleaseHealthChecksJudgeUnannotatedObjects(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	group := servedBeacons(t, env)
	chart := berthtest.WriteChart(t, "beacon", map[string]string{
		"templates/beacon.yaml": "apiVersion: " + group + "/v1\nkind: Beacon\nmetadata: {name: '{{ .Release.Name }}'}\nspec: {size: 1}\n",
	})
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, chart)
	releasetest.Deployer(t, env, "deployer")
	ctl := newController(t, env)
	ctl.start()

	ns := env.Namespace
	checks := []v1alpha1.HealthCheckExpressions{{APIVersion: group + "/v1", Kind: "Beacon",
		Current: "self.status.phase == 'Ready'", Failed: "status.phase == 'Broken'"}}
	create := func(name string, checks []v1alpha1.HealthCheckExpressions) {
		t.Helper()
		rel := releaseOf(t, ns, name, repo.URL, "beacon", "deployer", "{}")
		rel.Spec.HealthChecks = checks
		rel.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	// The controller is in the install's wait: the Beacon exists, and is not ready for it.
	waiting := func(rel *v1alpha1.Release) bool { return strings.HasPrefix(rel.Status.CurrentStep, "wait-ready") }
	create("first", checks)
	create("second", checks)

	releasetest.WaitFor(t, c, ns, "first", "waits for its Beacon", waiting)
	patched := setBeaconPhase(t, env, group, "first", "Ready")
	releasetest.WaitFor(t, c, ns, "first", "is installed", readyAt(1))
	sec, err := env.Client.CoreV1().Secrets(ns).Get(t.Context(), "sh.helm.release.v1.first.v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The devcluster has one etcd: resourceVersions of different objects compare.
	if written, err := strconv.ParseUint(sec.ResourceVersion, 10, 64); err != nil || written < patched {
		t.Errorf("release first was recorded at resourceVersion %s, before its Beacon was made ready at %d (%v)", sec.ResourceVersion, patched, err)
	}

	releasetest.WaitFor(t, c, ns, "second", "waits for its Beacon", waiting)
	setBeaconPhase(t, env, group, "second", "Broken")
	// releasetest.WaitTimeout (two minutes) is well within spec.timeout (ten).
	got := releasetest.WaitFor(t, c, ns, "second", "fails", func(rel *v1alpha1.Release) bool {
		r := releasetest.Condition(rel, controller.ConditionReady)
		return r != nil && r.Status == metav1.ConditionFalse && rel.Status.ObservedGeneration == rel.Generation &&
			rel.Status.LastAttemptedGeneration == rel.Generation
	})
	msg := releasetest.Condition(got, controller.ConditionReady).Message
	for _, want := range []string{"Beacon." + group + "/" + ns + "/second failed", "health check failed: status.phase == 'Broken' is true"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "timed out") {
		t.Errorf("Ready message speaks of a timeout: %s", msg)
	}

	create("third", []v1alpha1.HealthCheckExpressions{{APIVersion: group + "/v1", Kind: "Beacon", Current: "self.status.phase =="}})
	got = releasetest.WaitFor(t, c, ns, "third", "is stalled", func(rel *v1alpha1.Release) bool {
		s := releasetest.Condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue && rel.Status.ObservedGeneration == rel.Generation
	})
	if s := releasetest.Condition(got, controller.ConditionStalled); s.Reason != controller.ReasonInvalidHealthCheck || !strings.Contains(s.Message, "spec.healthChecks[0].current") {
		t.Errorf("Stalled %s (%s), want %s naming spec.healthChecks[0].current", s.Reason, s.Message, controller.ReasonInvalidHealthCheck)
	}
	berthtest.AssertNoObject(t, env, group+"/v1", "Beacon", "third")
	ctl.running()
}
