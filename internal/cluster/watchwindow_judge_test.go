package cluster

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

// The judge is pure: these tests feed it objects as watches would, at times of their choosing.

var (
	t0      = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	webID   = resource.Identity{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}
	jobID   = resource.Identity{Group: "batch", Kind: "Job", Namespace: "ns", Name: "task"}
	soloID  = resource.Identity{Kind: "Pod", Namespace: "ns", Name: "solo"}
	checkID = resource.Identity{Kind: "ConfigMap", Namespace: "ns", Name: "check"}
)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// fakeDeployment is the Deployment web, available (ready) or not.
func fakeDeployment(available bool) *unstructured.Unstructured {
	n := int64(2)
	if !available {
		n = 1
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "ns", "generation": int64(1)},
		"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{
			"matchExpressions": []any{map[string]any{"key": "app", "operator": "In", "values": []any{"web"}}}}},
		"status": map[string]any{"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": int64(2),
			"readyReplicas": n, "availableReplicas": n,
			"conditions": []any{map[string]any{"type": "Available", "status": "True"}}},
	}}
}

// fakeFailing is an object whose readiness annotations say it failed once status.broken is true.
func fakeFailing(broken bool) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "check", "namespace": "ns", "annotations": map[string]any{
			"helm.sh/readiness-success": `["{.status.ok} == true"]`,
			"helm.sh/readiness-failure": `["{.status.broken} == true"]`,
		}},
		"status": map[string]any{"ok": !broken, "broken": broken},
	}}
}

func fakeJob(failed bool) *unstructured.Unstructured {
	conds := []any{}
	if failed {
		conds = append(conds, map[string]any{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "too many"})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "task", "namespace": "ns"},
		"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"job": "task"}}},
		"status":   map[string]any{"conditions": conds},
	}}
}

type fakeContainer struct {
	name     string
	restarts int64
	waiting  string // reason of a waiting state; running otherwise
	exited   int64  // last exit code, when restarted
}

// fakePod is a Pod in ns with labels, phase and containers.
func fakePod(name string, labels map[string]any, phase string, cs ...fakeContainer) *unstructured.Unstructured {
	statuses := []any{}
	for _, c := range cs {
		m := map[string]any{"name": c.name, "restartCount": c.restarts, "state": map[string]any{"running": map[string]any{}}}
		if c.waiting != "" {
			m["state"] = map[string]any{"waiting": map[string]any{"reason": c.waiting}}
		}
		if c.restarts > 0 {
			m["lastState"] = map[string]any{"terminated": map[string]any{"exitCode": c.exited, "reason": "Error", "finishedAt": at(7).Format(time.RFC3339)}}
		}
		statuses = append(statuses, m)
	}
	ready := "True"
	if phase != "Running" {
		ready = "False"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "ns", "uid": "uid-" + name, "labels": labels},
		"status": map[string]any{"phase": phase, "containerStatuses": statuses,
			"conditions": []any{map[string]any{"type": "Ready", "status": ready}}},
	}}
}

var webLabels = map[string]any{"app": "web"}

func TestJudgeTolerance(t *testing.T) {
	j := newJudge([]resource.Identity{webID}, WindowOptions{For: time.Minute, Tolerance: 10 * time.Second})
	if reg, _ := j.target(webID, fakeDeployment(true), at(0)); reg != nil {
		t.Fatal(reg)
	}
	if _, ok := j.nextExpiry(); ok {
		t.Error("an expiry while every target is ready")
	}
	reg, n := j.target(webID, fakeDeployment(false), at(5))
	if reg != nil || n.id == nil || n.result.State != readiness.InProgress {
		t.Fatalf("not ready: %v, told %+v; want no regression and InProgress told", reg, n)
	}
	if e, ok := j.nextExpiry(); !ok || !e.Equal(at(15)) {
		t.Errorf("expiry %s, want %s", e, at(15))
	}
	if reg := j.expired(at(14)); reg != nil {
		t.Errorf("expired before the tolerance: %v", reg)
	}
	// Back within the tolerance: fine, and nothing expires any more.
	j.target(webID, fakeDeployment(true), at(12))
	if reg := j.expired(at(20)); reg != nil {
		t.Errorf("expired after coming back: %v", reg)
	}
	j.target(webID, fakeDeployment(false), at(30))
	j.target(webID, fakeDeployment(false), at(35)) // still not ready: the first time stands
	reg = j.expired(at(40))
	if reg == nil || reg.Object != webID || !reg.Since.Equal(at(30)) ||
		!strings.HasPrefix(reg.What, "was ready, now not ready for more than 10s: Available: 1/2") {
		t.Fatalf("expired: %+v; want web, since %s, was ready, now not ready", reg, at(30))
	}
	if got := reg.Error(); !strings.Contains(got, "Deployment.apps/ns/web: was ready, now not ready") || !strings.Contains(got, "since 2026-01-01T12:00:30Z") {
		t.Errorf("error %q", got)
	}
}

func TestJudgeFailed(t *testing.T) {
	j := newJudge([]resource.Identity{checkID, jobID}, WindowOptions{For: time.Minute})
	j.target(checkID, fakeFailing(false), at(0))
	j.target(jobID, fakeJob(false), at(0))
	reg, _ := j.target(checkID, fakeFailing(true), at(3))
	if reg == nil || reg.Object != checkID || !strings.HasPrefix(reg.What, "was ready, now failed: helm.sh/readiness-failure") || !reg.Since.Equal(at(3)) {
		t.Errorf("annotated failure: %+v", reg)
	}
	// A Job not waited for is ready while it runs, and a regression when it fails.
	reg, _ = j.target(jobID, fakeJob(true), at(4))
	if reg == nil || reg.Object != jobID || !strings.Contains(reg.What, "now failed: Job failed: BackoffLimitExceeded") {
		t.Errorf("failed Job: %+v", reg)
	}
}

func TestJudgeRestarts(t *testing.T) {
	c := func(restarts int64, waiting string) fakeContainer {
		return fakeContainer{name: "app", restarts: restarts, waiting: waiting, exited: 2}
	}
	for _, tc := range []struct {
		name     string
		allowed  int
		initial  bool // the Pod was in the first list
		sequence []fakeContainer
		// want is the What of the regression, empty for none; told how many restarts were told.
		want string
		told int
	}{
		{name: "counted from the first list", allowed: 1, initial: true,
			sequence: []fakeContainer{c(3, ""), c(4, ""), c(5, "")},
			want:     "container app restarted 2 time(s) in the window (1 allowed), last exit code 2 (Error)", told: 1},
		{name: "within the allowance", allowed: 2, initial: true,
			sequence: []fakeContainer{c(3, ""), c(4, ""), c(5, "")}, told: 2},
		{name: "a Pod created in the window counts from 0", allowed: 0,
			sequence: []fakeContainer{c(1, "")},
			want:     "container app restarted 1 time(s) in the window (0 allowed)"},
		{name: "CrashLoopBackOff counts as a restart", allowed: 0, initial: true,
			sequence: []fakeContainer{c(4, "CrashLoopBackOff")},
			want:     "container app restarted 1 time(s) in the window (0 allowed), waiting in CrashLoopBackOff, last exit code 2"},
		{name: "CrashLoopBackOff within the allowance", allowed: 1, initial: true,
			sequence: []fakeContainer{c(4, "CrashLoopBackOff")}, told: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJudge([]resource.Identity{webID}, WindowOptions{For: time.Minute, Restarts: tc.allowed})
			j.target(webID, fakeDeployment(true), at(0))
			var reg *RegressionError
			told := 0
			for i, cs := range tc.sequence {
				var n notice
				reg, n = j.pod(fakePod("web-1", webLabels, "Running", cs), false, tc.initial && i == 0, at(10+i))
				if n.id != nil {
					told++
					if n.id.Name != "web-1" || !strings.Contains(n.result.Message, "container app restarted") {
						t.Errorf("told %s: %+v", n.id, n.result)
					}
				}
				if reg != nil {
					break
				}
			}
			if told != tc.told {
				t.Errorf("told %d restarts, want %d", told, tc.told)
			}
			if tc.want == "" {
				if reg != nil {
					t.Fatalf("regression %v, want none", reg)
				}
				return
			}
			if reg == nil || reg.Object != webID || reg.Pod == nil || reg.Pod.Name != "web-1" || reg.container != "app" ||
				!strings.HasPrefix(reg.What, tc.want) || !reg.Since.Equal(at(7)) {
				t.Fatalf("regression %+v; want web's Pod web-1, container app, %q, at the restart", reg, tc.want)
			}
		})
	}
}

func TestJudgePods(t *testing.T) {
	jobOwned := func(p *unstructured.Unstructured) *unstructured.Unstructured {
		p.Object["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": "task", "uid": "j"}}
		return p
	}
	deleting := func(p *unstructured.Unstructured) *unstructured.Unstructured {
		p.SetDeletionTimestamp(nil)
		p.Object["metadata"].(map[string]any)["deletionTimestamp"] = at(1).Format(time.RFC3339)
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *unstructured.Unstructured
		want resource.Identity // the regressed object; zero: none
		what string
	}{
		{name: "a failed Pod of a Deployment", pod: fakePod("web-1", webLabels, "Failed"), want: webID, what: "failed: failed"},
		{name: "a failed bare Pod of the release", pod: fakePod("solo", nil, "Failed"), want: soloID, what: "failed: failed"},
		{name: "a failed Pod of a Job", pod: jobOwned(fakePod("task-1", map[string]any{"job": "task"}, "Failed"))},
		{name: "a failed Pod being deleted", pod: deleting(fakePod("web-1", webLabels, "Failed"))},
		{name: "a failed Pod of nothing in the release", pod: fakePod("other", map[string]any{"app": "other"}, "Failed")},
		{name: "a restart of a Pod of nothing in the release", pod: fakePod("other", map[string]any{"app": "other"}, "Running", fakeContainer{name: "x", restarts: 4})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJudge([]resource.Identity{webID, jobID, soloID}, WindowOptions{For: time.Minute})
			j.target(webID, fakeDeployment(true), at(0))
			j.target(jobID, fakeJob(false), at(0))
			reg, _ := j.pod(tc.pod, false, false, at(2))
			if tc.want == (resource.Identity{}) {
				if reg != nil {
					t.Fatalf("regression %v, want none", reg)
				}
				return
			}
			if reg == nil || reg.Object != tc.want || reg.Pod == nil || reg.Pod.Name != tc.pod.GetName() || reg.What != tc.what {
				t.Fatalf("regression %+v, want %s: %q", reg, tc.want, tc.what)
			}
		})
	}
}

// A regression of a workload names its newest Pod that is not ready.
func TestJudgeNamesAPodNotReady(t *testing.T) {
	j := newJudge([]resource.Identity{webID}, WindowOptions{For: time.Minute})
	j.target(webID, fakeDeployment(true), at(0))
	j.pod(fakePod("web-1", webLabels, "Running"), false, true, at(0))
	pending := fakePod("web-2", webLabels, "Pending")
	j.pod(pending, false, false, at(1))
	j.target(webID, fakeDeployment(false), at(1))
	reg := j.final(at(60), false)
	if reg == nil || reg.Object != webID || reg.Pod == nil || reg.Pod.Name != "web-2" ||
		!strings.HasPrefix(reg.What, "not ready when the window ended: Available: 1/2") || !reg.Since.Equal(at(1)) {
		t.Fatalf("final: %+v; want web not ready since %s, naming web-2", reg, at(1))
	}
	if got := j.regressedPod(reg); got == nil || got.GetName() != "web-2" {
		t.Errorf("regressed Pod %v, want web-2 as last seen", got)
	}
}

// A window judged once judges what it sees: no restart can be counted, but CrashLoopBackOff and
// Failed Pods are regressions, and every target must be ready.
func TestJudgeOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pods   []*unstructured.Unstructured
		webNow *unstructured.Unstructured
		what   string // empty: no regression
	}{
		{name: "all ready", pods: []*unstructured.Unstructured{fakePod("web-1", webLabels, "Running", fakeContainer{name: "app", restarts: 9})}},
		{name: "crash-looping", pods: []*unstructured.Unstructured{fakePod("web-1", webLabels, "Running", fakeContainer{name: "app", restarts: 9, waiting: "CrashLoopBackOff"})},
			what: "container app is waiting in CrashLoopBackOff, last exit code 0 (Error)"},
		{name: "a failed Pod", pods: []*unstructured.Unstructured{fakePod("web-1", webLabels, "Failed")}, what: "failed: failed"},
		{name: "not ready", webNow: fakeDeployment(false), what: "not ready when the window ended: Available: 1/2"},
		{name: "absent", webNow: nil, what: "not ready when the window ended: not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJudge([]resource.Identity{webID}, WindowOptions{})
			for _, p := range tc.pods {
				if reg, n := j.pod(p, false, true, at(0)); reg != nil || n.id != nil {
					t.Fatalf("a window judged once judged an event: %v, %+v", reg, n)
				}
			}
			web := fakeDeployment(true)
			if tc.name == "not ready" || tc.name == "absent" {
				web = tc.webNow
			}
			if web != nil {
				j.target(webID, web, at(0))
			}
			j.unseen(at(0))
			reg := j.final(at(0), true)
			if tc.what == "" {
				if reg != nil {
					t.Fatalf("regression %v, want none", reg)
				}
				return
			}
			if reg == nil || reg.Object != webID || !strings.HasPrefix(reg.What, tc.what) {
				t.Fatalf("regression %+v, want web: %q", reg, tc.what)
			}
		})
	}
}

func TestRegressionDetail(t *testing.T) {
	pod := resource.Identity{Kind: "Pod", Namespace: "ns", Name: "web-1"}
	reg := &RegressionError{Object: webID, Pod: &pod, What: "container app restarted 1 time(s)", Since: at(7), event: true,
		Report: &PodReport{Name: "web-1", Phase: "Running", Containers: []string{"app: waiting: CrashLoopBackOff"}},
		Logs:   map[string]string{"web-1/app (previous)": "starting\npanic: boom\n"}}
	if got, want := reg.Error(), "Deployment.apps/ns/web: Pod web-1: container app restarted 1 time(s) (at 2026-01-01T12:00:07Z)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	want := []string{"Pod web-1: Running", "  app: waiting: CrashLoopBackOff", "log of web-1/app (previous):", "  starting", "  panic: boom"}
	if got := reg.Detail(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Detail() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
