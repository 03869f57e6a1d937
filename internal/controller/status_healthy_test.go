package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// object is a live object, from YAML.
func object(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return obj
}

const (
	availableDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps, generation: 2}
spec: {replicas: 1}
status:
  observedGeneration: 2
  replicas: 1
  updatedReplicas: 1
  readyReplicas: 1
  availableReplicas: 1
  conditions: [{type: Available, status: "True"}, {type: Progressing, status: "True", reason: NewReplicaSetAvailable}]
`
	unavailableDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: apps, generation: 2}
spec: {replicas: 2}
status:
  observedGeneration: 2
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 0
  availableReplicas: 0
  conditions: [{type: Available, status: "False"}, {type: Progressing, status: "True", reason: NewReplicaSetAvailable}]
`
	runningJob = `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: apps}
status: {active: 1}
`
	failedJob = `
apiVersion: batch/v1
kind: Job
metadata: {name: backfill, namespace: apps}
status:
  failed: 3
  conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}]
`
)

// TestHealthTally: the release's objects are judged by the waits' rules: an available Deployment
// and a running Job are healthy; a Deployment without its replicas, a failed Job and a missing
// object are not, each named with what its readiness says.
func TestHealthTally(t *testing.T) {
	tally := newHealthTally(&desired{Drift: driftRules{Mode: v1alpha1.DriftDetect}})
	for _, text := range []string{availableDeployment, unavailableDeployment, runningJob, failedJob} {
		obj := object(t, text)
		tally.see(resource.IdentityOf(obj), obj)
	}
	tally.see(resource.Identity{Kind: "Service", Namespace: "apps", Name: "web"}, nil)
	status, reason, msg := healthVerdict(tally, 3, nil)
	if status != metav1.ConditionFalse || reason != ReasonDegraded {
		t.Fatalf("%s %s: %s", status, reason, msg)
	}
	for _, want := range []string{
		"3 object(s) of revision 3 are not ready: ",
		"Deployment.apps/apps/api is not ready: ",
		"Job.batch/apps/backfill failed: Job failed: BackoffLimitExceeded",
		"Service/apps/web is missing",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message does not say %q: %s", want, msg)
		}
	}
	for _, healthy := range []string{"Deployment.apps/apps/web", "migrate"} {
		if strings.Contains(msg, healthy) {
			t.Errorf("message names a healthy object (%s): %s", healthy, msg)
		}
	}

	tally.forget([]resource.Identity{{Kind: "Service", Namespace: "apps", Name: "web"}})
	if _, _, msg := healthVerdict(tally, 3, nil); strings.Contains(msg, "Service") || !strings.HasPrefix(msg, "2 object(s)") {
		t.Errorf("a missing object put back is still named: %s", msg)
	}

	ok := newHealthTally(&desired{UpgradeWatch: lifecycle.WatchOptions{For: 1}})
	obj := object(t, availableDeployment)
	ok.see(resource.IdentityOf(obj), obj)
	if status, reason, msg := healthVerdict(ok, 2, nil); status != metav1.ConditionTrue || reason != ReasonHealthy || msg != "the 1 object(s) of revision 2 are ready" {
		t.Errorf("%s %s: %s", status, reason, msg)
	}
	if status, reason, msg := healthVerdict(ok, 2, errors.New("the server is down")); status != metav1.ConditionUnknown || reason != ReasonHealthUnknown || !strings.Contains(msg, "the server is down") {
		t.Errorf("%s %s: %s", status, reason, msg)
	}
}

// TestHealthReported: Healthy is kept when the objects are read between operations anyway
// (drift detect or correct), or when the Release has a watch window; otherwise not at all.
func TestHealthReported(t *testing.T) {
	for _, tt := range []struct {
		d    desired
		want bool
	}{
		{desired{Drift: driftRules{Mode: v1alpha1.DriftDisabled}}, false},
		{desired{Drift: driftRules{Mode: v1alpha1.DriftDetect}}, true},
		{desired{Drift: driftRules{Mode: v1alpha1.DriftCorrect}}, true},
		{desired{Drift: driftRules{Mode: v1alpha1.DriftDisabled}, InstallWatch: lifecycle.WatchOptions{For: 1}}, true},
		{desired{Drift: driftRules{Mode: v1alpha1.DriftDisabled}, UpgradeWatch: lifecycle.WatchOptions{For: 1}}, true},
	} {
		if got := healthReported(&tt.d); got != tt.want {
			t.Errorf("%+v: %v, want %v", tt.d, got, tt.want)
		}
		if got := newHealthTally(&tt.d) != nil; got != tt.want {
			t.Errorf("%+v: tally %v, want %v", tt.d, got, tt.want)
		}
	}
}

// TestHealthyMessageBounded: ten objects are named, the others counted, and the message is cut.
func TestHealthyMessageBounded(t *testing.T) {
	var bad []unhealthy
	for i := range 25 {
		bad = append(bad, unhealthy{ID: resource.Identity{Group: "apps", Kind: "Deployment", Namespace: "apps", Name: fmt.Sprintf("web-%02d", i)},
			Message: strings.Repeat("x", 300)})
	}
	msg := healthMessage(4, bad)
	if len(msg) > maxHealthMessage || !strings.HasPrefix(msg, "25 object(s) of revision 4 are not ready: ") || strings.Contains(msg, "web-10") {
		t.Errorf("message of %d bytes: %.200s", len(msg), msg)
	}
	if short := healthMessage(4, bad[:11]); !strings.HasSuffix(short, "...") && !strings.HasSuffix(short, "and 1 more object(s)") {
		t.Errorf("message: %s", short)
	}
}

// TestReportHealthEvents: an Event when Healthy turns False, not again while it stays False
// (whatever its message says), one when it turns True again, none while it stays True; the
// condition is removed when no revision is recorded.
func TestReportHealthEvents(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Recorder: rec}
	rel := &v1alpha1.Release{}
	d := &desired{Drift: driftRules{Mode: v1alpha1.DriftDetect}}
	judge := func(texts ...string) *healthTally {
		tally := newHealthTally(d)
		for _, text := range texts {
			obj := object(t, text)
			tally.see(resource.IdentityOf(obj), obj)
		}
		return tally
	}
	got := func() []string {
		var out []string
		for {
			select {
			case e := <-rec.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}
	r.reportHealth(context.Background(), rel, judge(availableDeployment), 1, nil)
	if e := got(); len(e) != 0 {
		t.Errorf("healthy from the start: events %q", e)
	}
	r.reportHealth(context.Background(), rel, judge(availableDeployment, unavailableDeployment), 1, nil)
	if e := got(); len(e) != 1 || !strings.HasPrefix(e[0], "Warning Degraded 1 object(s) of revision 1 are not ready: Deployment.apps/apps/api") {
		t.Errorf("turned False: events %q", e)
	}
	r.reportHealth(context.Background(), rel, judge(availableDeployment, unavailableDeployment, failedJob), 1, nil)
	if e := got(); len(e) != 0 {
		t.Errorf("stayed False: events %q", e)
	}
	c := meta.FindStatusCondition(rel.Status.Conditions, ConditionHealthy)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonDegraded || !strings.Contains(c.Message, "backfill") {
		t.Errorf("Healthy: %+v", c)
	}
	r.reportHealth(context.Background(), rel, judge(availableDeployment), 1, nil)
	if e := got(); len(e) != 1 || !strings.HasPrefix(e[0], "Normal Healthy the 1 object(s) of revision 1 are ready") {
		t.Errorf("turned True: events %q", e)
	}
	r.reportHealth(context.Background(), rel, judge(availableDeployment), 1, fmt.Errorf("read the records: %w", release.ErrNotFound))
	if c := meta.FindStatusCondition(rel.Status.Conditions, ConditionHealthy); c != nil {
		t.Errorf("no revision recorded: Healthy %+v", c)
	}
}

// TestHealthAfterOperation: an operation that waited leaves Healthy True, one that did not,
// Unknown; a Release whose health is not reported has no Healthy condition.
func TestHealthAfterOperation(t *testing.T) {
	rel := &v1alpha1.Release{}
	d := &desired{UpgradeWatch: lifecycle.WatchOptions{For: 1}}
	healthAfter(rel, d, 2, true)
	if c := meta.FindStatusCondition(rel.Status.Conditions, ConditionHealthy); c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonHealthy {
		t.Errorf("waited: %+v", c)
	}
	healthAfter(rel, d, 3, false)
	if c := meta.FindStatusCondition(rel.Status.Conditions, ConditionHealthy); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != ReasonHealthUnknown {
		t.Errorf("did not wait: %+v", c)
	}
	healthAfter(rel, &desired{}, 4, true)
	if c := meta.FindStatusCondition(rel.Status.Conditions, ConditionHealthy); c != nil {
		t.Errorf("not reported: %+v", c)
	}
}
