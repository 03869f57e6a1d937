package cluster_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

func hookJob(t *testing.T, namespace, name, podAnnotations, extraSpec string) string {
	t.Helper()
	return fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata: {name: %s, namespace: %s}
spec:
  backoffLimit: 0
  %s
  template:
    metadata: {annotations: {%s}}
    spec:
      restartPolicy: Never
      containers: [{name: hook, image: example.invalid/hook}]
`, name, namespace, extraSpec, podAnnotations)
}

// A hook that completes at once and is reaped at once is still seen to succeed, every time.
func TestRunHookSeesInstantJobsReapedAtOnce(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	ctx := deadline(t)
	for i := range 20 {
		obj := object(t, hookJob(t, env.Namespace, fmt.Sprintf("instant-%d", i), "devcluster.berth.dev/run: 0s", "ttlSecondsAfterFinished: 0"))
		run, err := c.RunHook(ctx, obj, cluster.HookOptions{})
		if err != nil || run.Result.State != readiness.Ready {
			t.Fatalf("run %d: %v, %v; want the Job seen complete", i, run.Result, err)
		}
	}
}

func TestRunHookReportsFailure(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	obj := object(t, hookJob(t, env.Namespace, "broken", "devcluster.berth.dev/run: 0s, devcluster.berth.dev/outcome: fail, devcluster.berth.dev/exit-code: '3'", ""))
	var failures []cluster.PodFailure
	run, err := c.RunHook(deadline(t), obj, cluster.HookOptions{PodFailed: func(p cluster.PodFailure) { failures = append(failures, p) }})
	if err != nil || run.Result.State != readiness.Failed || !strings.Contains(run.Result.Message, "BackoffLimitExceeded") {
		t.Fatalf("RunHook = %+v, %v; want Failed with the Job's reason", run.Result, err)
	}
	if len(failures) != 1 || failures[0].Retried || failures[0].Attempts != 1 || !strings.Contains(failures[0].Reason, "exit code 3") {
		t.Errorf("Pod failures %+v, want one, not retried, with exit code 3", failures)
	}
	r := run.Report
	if r == nil {
		t.Fatal("no report of the failed hook")
	}
	if len(r.Conditions) == 0 || !strings.Contains(strings.Join(r.Conditions, "\n"), "BackoffLimitExceeded") {
		t.Errorf("report conditions %q do not say BackoffLimitExceeded", r.Conditions)
	}
	if len(r.Pods) != 1 || r.Pods[0].Phase != "Failed" || !strings.Contains(strings.Join(r.Pods[0].Containers, ""), "exit code 3") {
		t.Errorf("report Pods %+v, want one Failed Pod whose container exited with 3", r.Pods)
	}
	if len(r.Logs) != 1 {
		t.Errorf("report logs %v, want one entry (the logs, or why there are none)", r.Logs)
	}
}

// The first Pod is evicted, the Job controller retries, the retry succeeds: one retry is told.
func TestRunHookReportsRetries(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	obj := object(t, hookJob(t, env.Namespace, "evicted", "devcluster.berth.dev/outcome: evict, devcluster.berth.dev/attempts: '1'", ""))
	obj.Object["spec"].(map[string]any)["backoffLimit"] = int64(2)
	var failures []cluster.PodFailure
	run, err := c.RunHook(deadline(t), obj, cluster.HookOptions{PodFailed: func(p cluster.PodFailure) { failures = append(failures, p) }})
	if err != nil || run.Result.State != readiness.Ready {
		t.Fatalf("RunHook = %+v, %v; want the Job complete after its retry", run.Result, err)
	}
	if len(failures) != 1 || !failures[0].Retried || failures[0].Attempt != 1 || failures[0].Attempts != 3 ||
		!strings.HasPrefix(failures[0].Reason, "Evicted") {
		t.Errorf("Pod failures %+v, want one eviction, attempt 1 of 3, retried", failures)
	}
}

func TestRunHookReportsDeletionByOthers(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	ctx := deadline(t)
	obj := object(t, hookJob(t, env.Namespace, "endless", "devcluster.berth.dev/outcome: hang", ""))
	progress := func(id resource.Identity, r readiness.Result) {
		// Someone else deletes the hook while it runs.
		if strings.Contains(r.Message, "1 active") {
			prop := metav1.DeletePropagationBackground
			env.Client.BatchV1().Jobs(env.Namespace).Delete(ctx, "endless", metav1.DeleteOptions{PropagationPolicy: &prop})
		}
	}
	run, err := c.RunHook(ctx, obj, cluster.HookOptions{Progress: progress})
	if err != nil || run.Result.State != readiness.Failed || !run.Gone || !strings.Contains(run.Result.Message, "deleted before it finished") {
		t.Fatalf("RunHook = %+v, %v; want Failed saying it was deleted", run, err)
	}
	if !strings.Contains(run.Result.Message, "1 active") {
		t.Errorf("message %q does not say what was last seen", run.Result.Message)
	}
}

// The lines a hook's containers write are told as they are written, while the hook runs: here
// the hook never ends by itself, and is deleted once both lines were told.
func TestRunHookFollowsLogs(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	c.WithPodLogs(env.Client.CoreV1())
	ctx := deadline(t)
	obj := object(t, hookJob(t, env.Namespace, "talker", `devcluster.berth.dev/outcome: hang, devcluster.berth.dev/log: "starting\nmigrated 3 tables"`, ""))
	var lines []cluster.LogLine
	logLine := func(l cluster.LogLine) {
		lines = append(lines, l)
		if len(lines) == 2 {
			prop := metav1.DeletePropagationBackground
			env.Client.BatchV1().Jobs(env.Namespace).Delete(ctx, "talker", metav1.DeleteOptions{PropagationPolicy: &prop})
		}
	}
	run, err := c.RunHook(ctx, obj, cluster.HookOptions{LogLine: logLine})
	if err != nil || !run.Gone {
		t.Fatalf("RunHook = %+v, %v; want the hook deleted while it ran", run.Result, err)
	}
	var got []string
	for _, l := range lines {
		if !strings.HasPrefix(l.Pod, "talker-") || l.Container != "hook" {
			t.Errorf("line %q from %s/%s, want the hook container of a Pod of Job talker", l.Line, l.Pod, l.Container)
		}
		got = append(got, l.Line)
	}
	if strings.Join(got, "|") != "starting|migrated 3 tables" {
		t.Errorf("lines told %q, want the two the container wrote, in order", got)
	}
}

// A Pod hook's own containers are followed, and the lines they wrote are all told before the
// hook's outcome.
func TestRunHookFollowsPodHookLogs(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	c.WithPodLogs(env.Client.CoreV1())
	obj := object(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: talker
  namespace: %s
  annotations: {devcluster.berth.dev/outcome: succeed, devcluster.berth.dev/log: "one\ntwo\nthree"}
spec:
  restartPolicy: Never
  containers: [{name: main, image: example.invalid/hook}]
`, env.Namespace))
	var got []string
	run, err := c.RunHook(deadline(t), obj, cluster.HookOptions{LogLine: func(l cluster.LogLine) {
		got = append(got, l.Pod+"/"+l.Container+": "+l.Line)
	}})
	if err != nil || run.Result.State != readiness.Ready {
		t.Fatalf("RunHook = %+v, %v; want the Pod succeeded", run.Result, err)
	}
	if want := "talker/main: one|talker/main: two|talker/main: three"; strings.Join(got, "|") != want {
		t.Errorf("lines told %q, want %q", got, want)
	}
}
