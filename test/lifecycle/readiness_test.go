package lifecycle

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// annotatedBeacon is a Beacon of group %[1]s with no status, ready when its status says Ready and
// failed when it says Broken; %[2]s is the success annotation's value.
const annotatedBeacon = `apiVersion: %[1]s/v1
kind: Beacon
metadata:
  name: cache
  annotations:
    helm.sh/readiness-success: '%[2]s'
    helm.sh/readiness-failure: '["{.status.phase} == \"Broken\""]'
spec:
  size: 1
`

const readyWhenReady = `["{.status.phase} == \"Ready\""]`

// beaconChart writes a chart whose crds/ defines Beacon in a group of the test's own, and whose
// template is annotatedBeacon with success as its success annotation.
func beaconChart(t *testing.T, env *testenv.Env, success string) (chart, group string) {
	t.Helper()
	group = "ready-" + berthtest.Suffix(env) + ".example.com"
	t.Cleanup(func() { deleteCRDs(t, env, "beacons."+group) })
	return berthtest.WriteChart(t, "beacons", map[string]string{
		"crds/beacon.yaml":      fmt.Sprintf(berthtest.BeaconCRD, group),
		"templates/beacon.yaml": fmt.Sprintf(annotatedBeacon, group, success),
	}), group
}

// setBeaconPhase writes status.phase of the Beacon name, and returns the resourceVersion of the write.
func setBeaconPhase(t *testing.T, env *testenv.Env, group, name, phase string) uint64 {
	t.Helper()
	out, err := env.Resource(t, group+"/v1", "Beacon").Patch(t.Context(), name, types.MergePatchType,
		[]byte(`{"status":{"phase":"`+phase+`"}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("set the phase of Beacon %s: %v", name, err)
	}
	return parseRV(t, out.GetResourceVersion())
}

// recordWriteRV returns the resourceVersion of the last write of the record of a release's
// revision. The devcluster has one etcd, whose revisions order every write of the cluster:
// resourceVersions of different objects compare.
func recordWriteRV(t *testing.T, env *testenv.Env, name string, revision int) uint64 {
	t.Helper()
	sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(t.Context(), fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, revision), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read the record of %s revision %d: %v", name, revision, err)
	}
	return parseRV(t, sec.ResourceVersion)
}

func parseRV(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

// TestInstallWaitsForReadinessSuccessExpression installs a chart whose custom resource has no
// status and a helm.sh/readiness-success expression: kstatus would call it ready at once. berth
// waits until the test makes the expression true, and records the release as deployed only
// after that.
func TestInstallWaitsForReadinessSuccessExpression(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart, group := beaconChart(t, env, readyWhenReady)
	id := "Beacon." + group + "/" + env.Namespace + "/cache"

	done, stderr, _ := background(t, env, "install", "beacons", chart, "--wait", "--timeout", "10m")
	waiting := id + `: waiting for helm.sh/readiness-success: {.status.phase} == "Ready"`
	waitFor(t, "berth waits for the Beacon's success expression", func(context.Context) (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("install ended before the Beacon was ready: %v\n%s", err, stderr)
		default:
		}
		return strings.Contains(stderr.String(), waiting), nil
	})
	select {
	case err := <-done:
		t.Fatalf("install ended before the Beacon was ready: %v\n%s", err, stderr)
	default:
	}
	patched := setBeaconPhase(t, env, group, "cache", "Ready")

	if err := <-done; err != nil {
		t.Fatalf("install: %v\n%s", err, stderr)
	}
	if rel := berthtest.LastRecord(t, env, "beacons"); rel.Info.Status != "deployed" {
		t.Fatalf("revision %d is %s, want deployed", rel.Version, rel.Info.Status)
	}
	if written := recordWriteRV(t, env, "beacons", 1); written < patched {
		t.Errorf("the release was recorded as deployed at resourceVersion %d, before the Beacon was made ready at %d", written, patched)
	}
	if ready := id + `: helm.sh/readiness-success: {.status.phase} == "Ready" is true`; !strings.Contains(stderr.String(), ready) {
		t.Errorf("the progress does not say %q:\n%s", ready, stderr)
	}
}

// TestInstallFailsAtOnceOnReadinessFailureExpression: once the Beacon's failure expression is
// true, the install fails with an error naming the Beacon and the expression, long before its
// --timeout of ten minutes.
func TestInstallFailsAtOnceOnReadinessFailureExpression(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart, group := beaconChart(t, env, readyWhenReady)
	id := "Beacon." + group + "/" + env.Namespace + "/cache"

	done, stderr, _ := background(t, env, "install", "beacons", chart, "--wait", "--timeout", "10m")
	waitFor(t, "berth waits for the Beacon", func(context.Context) (bool, error) {
		return strings.Contains(stderr.String(), id+": waiting for helm.sh/readiness-success"), nil
	})
	setBeaconPhase(t, env, group, "cache", "Broken")

	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("install still waits two minutes after the Beacon's failure expression became true (its --timeout is 10m):\n%s", stderr)
	}
	if err == nil {
		t.Fatalf("install succeeded, want it failed by the Beacon's failure expression:\n%s", stderr)
	}
	msg := err.Error()
	for _, want := range []string{id + " failed", `helm.sh/readiness-failure: {.status.phase} == "Broken" is true`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "timed out") {
		t.Errorf("the error speaks of a timeout:\n%s", msg)
	}
	if rel := berthtest.LastRecord(t, env, "beacons"); rel.Info.Status != "failed" {
		t.Errorf("revision %d is %s, want failed", rel.Version, rel.Info.Status)
	}
}

// TestMalformedReadinessAnnotationChangesNothing: an expression that cannot be read is an error
// before anything changes, naming the object, the annotation and the expression.
func TestMalformedReadinessAnnotationChangesNothing(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart, group := beaconChart(t, env, `["{.status.phase} = \"Ready\""]`)

	_, stderr, err := berthtest.Berth(t, env, "install", "beacons", chart, "--wait", "--timeout", "10m")
	if err == nil {
		t.Fatalf("install succeeded with a malformed readiness annotation:\n%s", stderr)
	}
	for _, want := range []string{"Beacon." + group + "/" + env.Namespace + "/cache", "helm.sh/readiness-success", `{.status.phase} = "Ready"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	berthtest.AssertNoObject(t, env, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "beacons."+group)
	berthtest.AssertNotRecorded(t, env, "beacons")
}
