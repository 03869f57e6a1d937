package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
)

// windowDeployment is a Deployment web of replicas Pods whose Pods carry podAnnotations.
func windowDeployment(replicas int, podAnnotations string) string {
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {%s}
    spec:
      containers: [{name: web, image: example.invalid/web}]
`, replicas, podAnnotations)
}

// patchWeb merge-patches the Deployment web.
func patchWeb(patch string) func(context.Context, *testing.T, *testenv.Env) {
	return func(ctx context.Context, t *testing.T, env *testenv.Env) {
		if _, err := env.Client.AppsV1().Deployments(env.Namespace).Patch(ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitPodFailed waits, by watching, until the Pod name is Failed.
func waitPodFailed(ctx context.Context, t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	w, err := env.Client.CoreV1().Pods(env.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if pod, ok := ev.Object.(*corev1.Pod); ok && pod.Status.Phase == corev1.PodFailed {
			return
		}
	}
	t.Fatalf("Pod %s not seen Failed: %v", name, context.Cause(ctx))
}

// crashLoop are the annotations of a Pod that is Ready for 3s, then crash-loops, restarting every
// second, each instance writing the same log.
const crashLoop = "devcluster.berth.dev/outcome: crashloop, devcluster.berth.dev/run: 3s, devcluster.berth.dev/restart-interval: 1s, " +
	"devcluster.berth.dev/exit-code: '3', devcluster.berth.dev/log: 'panic: lost the database'"

func TestWatchWindow(t *testing.T) {
	t.Parallel()
	web := resource.Identity{Group: "apps", Kind: "Deployment", Name: "web"}
	for _, tc := range []struct {
		name     string
		manifest string
		opts     cluster.WindowOptions
		// change is made once the objects are ready, before the window opens.
		change func(context.Context, *testing.T, *testenv.Env)
		// object and pod are what the regression names (pod: its name's prefix); a zero object
		// wants no regression.
		object resource.Identity
		pod    string
		what   string
		// log is what a log of the regressed Pod holds.
		log string
		// failed says the objects fail before the window: the window waits for that.
		failed bool
		// told is what progress is told, among other things.
		told string
	}{{
		name:     "a Deployment that stays ready",
		manifest: windowDeployment(2, "") + "---\n{apiVersion: v1, kind: ConfigMap, metadata: {name: settings}}",
		opts:     cluster.WindowOptions{For: 2 * time.Second, Tolerance: time.Second},
	}, {
		name:     "a window judged once, ready",
		manifest: windowDeployment(2, ""),
		opts:     cluster.WindowOptions{Tolerance: time.Minute},
	}, {
		name:     "a window that ends before its first lists",
		manifest: windowDeployment(2, "") + "---\n{apiVersion: v1, kind: ConfigMap, metadata: {name: settings}}",
		opts:     cluster.WindowOptions{For: time.Nanosecond, Tolerance: time.Minute},
	}, {
		name: "a window judged once, a Pod failed",
		manifest: `
apiVersion: v1
kind: Pod
metadata: {name: solo, annotations: {devcluster.berth.dev/outcome: fail, devcluster.berth.dev/run: 0s}}
spec:
  containers: [{name: solo, image: example.invalid/solo}]
`,
		failed: true,
		opts:   cluster.WindowOptions{Tolerance: time.Minute},
		object: resource.Identity{Kind: "Pod", Name: "solo"}, pod: "solo", what: "failed: exit code 1 (Error)",
	}, {
		name:     "a Pod of a Deployment that ends Failed",
		manifest: windowDeployment(1, "devcluster.berth.dev/outcome: fail, devcluster.berth.dev/run: 3s, devcluster.berth.dev/log: crashed here"),
		opts:     cluster.WindowOptions{For: time.Minute, Tolerance: time.Minute},
		object:   web, pod: "web-", what: "failed: exit code 1 (Error)", log: "crashed here",
	}, {
		name: "a bare Pod that ends Failed",
		manifest: `
apiVersion: v1
kind: Pod
metadata: {name: solo, annotations: {devcluster.berth.dev/outcome: fail, devcluster.berth.dev/run: 3s, devcluster.berth.dev/exit-code: "4"}}
spec:
  containers: [{name: solo, image: example.invalid/solo}]
`,
		opts:   cluster.WindowOptions{For: time.Minute, Tolerance: time.Minute},
		object: resource.Identity{Kind: "Pod", Name: "solo"}, pod: "solo", what: "failed: exit code 4 (Error)",
	}, {
		name: "a Job that fails, not waited for",
		manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: task}
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {devcluster.berth.dev/outcome: fail, devcluster.berth.dev/run: 3s}}
    spec:
      restartPolicy: Never
      containers: [{name: task, image: example.invalid/task}]
`,
		opts:   cluster.WindowOptions{For: time.Minute, Tolerance: time.Minute},
		object: resource.Identity{Group: "batch", Kind: "Job", Name: "task"}, pod: "task-", what: "failed: Job failed: BackoffLimitExceeded",
	}, {
		name:     "a Deployment not ready for longer than the tolerance",
		manifest: windowDeployment(1, ""),
		change:   patchWeb(`{"spec":{"template":{"metadata":{"annotations":{"devcluster.berth.dev/start":"1h"}}}}}`),
		opts:     cluster.WindowOptions{For: time.Minute, Tolerance: 500 * time.Millisecond},
		object:   web, pod: "web-", what: "not ready for more than 500ms",
	}, {
		name:     "a Deployment not ready for a while within the tolerance",
		manifest: windowDeployment(1, "devcluster.berth.dev/start: 2s"),
		change:   patchWeb(`{"spec":{"replicas":2}}`),
		opts:     cluster.WindowOptions{For: 15 * time.Second, Tolerance: time.Minute},
	}, {
		name:     "a Deployment whose Pod crash-loops",
		manifest: windowDeployment(1, crashLoop),
		opts:     cluster.WindowOptions{For: time.Minute, Tolerance: time.Minute},
		object:   web, pod: "web-", what: "container web restarted 1 time(s) in the window (0 allowed), waiting in CrashLoopBackOff, last exit code 3 (Error)",
		log: "panic: lost the database",
	}, {
		name:     "a Deployment whose Pod crash-loops more than allowed",
		manifest: windowDeployment(1, crashLoop),
		opts:     cluster.WindowOptions{For: time.Minute, Tolerance: time.Minute, Restarts: 2},
		object:   web, pod: "web-", what: "container web restarted 3 time(s) in the window (2 allowed), waiting in CrashLoopBackOff",
		log: "panic: lost the database", told: "InProgress: container web restarted 2 time(s) in the window (2 allowed), last exit code 3 (Error)",
	}, {
		name:     "a Deployment whose Pod crash-loops, not ready for longer than the tolerance",
		manifest: windowDeployment(1, crashLoop),
		opts:     cluster.WindowOptions{For: time.Minute, Tolerance: 500 * time.Millisecond, Restarts: 1000},
		object:   web, pod: "web-", what: "was ready, now not ready for more than 500ms",
		log: "panic: lost the database",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env, c := setup(t)
			c.WithPodLogs(env.Client.CoreV1())
			ctx := deadline(t)
			var ids []resource.Identity
			for _, obj := range env.ApplyAll(t, tc.manifest) {
				ids = append(ids, resource.IdentityOf(obj))
			}
			if tc.failed {
				waitPodFailed(ctx, t, env, "solo")
			} else if err := c.WaitReady(ctx, ids, readiness.Options{}, nil); err != nil {
				t.Fatalf("wait ready: %v", err)
			}
			if tc.change != nil {
				tc.change(ctx, t, env)
			}
			mark := env.AuditMark(t)
			var told []string
			err := c.WatchWindow(ctx, ids, tc.opts, func(id resource.Identity, r readiness.Result) {
				told = append(told, fmt.Sprintf("%s: %s: %s", id, r.State, r.Message))
			})
			t.Logf("told:\n%s", strings.Join(told, "\n"))
			if !strings.Contains(strings.Join(told, "\n"), tc.told) {
				t.Errorf("progress was not told %q", tc.told)
			}
			// The window lists and watches; it reads nothing else but a regressed Pod's log.
			for _, ev := range env.AuditEvents(t, mark) {
				if ev.UserAgent == "berth-testenv" && ev.Verb != "list" && ev.Verb != "watch" && ev.Subresource != "log" {
					t.Errorf("the window made the request %s", ev)
				}
			}
			if tc.object == (resource.Identity{}) {
				if err != nil {
					t.Fatalf("window: %v, want none", err)
				}
				return
			}
			var reg *cluster.RegressionError
			if !errors.As(err, &reg) {
				t.Fatalf("window: %v, want a regression", err)
			}
			t.Logf("regression: %v\n%s", reg, strings.Join(reg.Detail(), "\n"))
			want := tc.object
			want.Namespace = env.Namespace
			if reg.Object != want || !strings.Contains(reg.What, tc.what) || reg.Since.IsZero() {
				t.Errorf("regression of %s, %q since %s; want %s, %q", reg.Object, reg.What, reg.Since, want, tc.what)
			}
			if reg.Pod == nil || !strings.HasPrefix(reg.Pod.Name, tc.pod) || reg.Report == nil || reg.Report.Name != reg.Pod.Name {
				t.Fatalf("regression's Pod %v, report %+v; want Pod %s… and its report", reg.Pod, reg.Report, tc.pod)
			}
			if tc.log != "" && !strings.Contains(fmt.Sprint(reg.Logs), tc.log) {
				t.Errorf("logs %q do not hold %q", reg.Logs, tc.log)
			}
		})
	}
}

// A window that its operation's deadline ends first says it did not complete.
func TestWatchWindowIncomplete(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	cm := env.Apply(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings}}`)
	ctx, cancel := context.WithTimeout(deadline(t), time.Second)
	defer cancel()
	err := c.WatchWindow(ctx, []resource.Identity{resource.IdentityOf(cm)}, cluster.WindowOptions{For: time.Hour}, nil)
	var inc *cluster.WindowIncompleteError
	if !errors.As(err, &inc) || !errors.Is(err, context.DeadlineExceeded) || inc.Left <= 0 || inc.For != time.Hour {
		t.Fatalf("window: %v, want it incomplete for the deadline", err)
	}
}
