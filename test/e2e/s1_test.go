package e2e

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// cleanupChart has a ConfigMap of work created at install time (by a post-install hook, so that
// uninstall itself does not delete it) and a post-delete hook Job that deletes it. The cleanup
// hook's weight and delete policy, and how its Pods end on devcluster, come from values.
var cleanupChart = map[string]string{
	"values.yaml": `
cleanup:
  weight: 5
  deletePolicy: before-hook-creation,hook-succeeded
  outcome: evict
  attempts: "1"
`,
	"templates/settings.yaml": `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue}
`,
	"templates/work.yaml": `
apiVersion: v1
kind: ConfigMap
metadata:
  name: work
  annotations: {helm.sh/hook: post-install}
data: {queue: pending}
`,
	"templates/cleanup.yaml": `
apiVersion: batch/v1
kind: Job
metadata:
  name: cleanup
  annotations:
    helm.sh/hook: post-delete
    helm.sh/hook-weight: {{ .Values.cleanup.weight | quote }}
    helm.sh/hook-delete-policy: {{ .Values.cleanup.deletePolicy }}
spec:
  backoffLimit: 2
  template:
    metadata:
      annotations:
        devcluster.berth.dev/outcome: {{ .Values.cleanup.outcome }}
        {{- with .Values.cleanup.attempts }}
        devcluster.berth.dev/attempts: {{ . | quote }}
        {{- end }}
        devcluster.berth.dev/exit-code: "3"
        devcluster.berth.dev/log: "configmap \"work\" deleted"
    spec:
      restartPolicy: Never
      containers:
      - name: cleanup
        image: example.invalid/kubectl
        command: [kubectl, delete, configmap, work, --ignore-not-found]
`,
}

func TestS1CleanupHookRetriedAfterEviction(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ctx := t.Context()
	chart := berthtest.WriteChart(t, "s1", cleanupChart)
	berthtest.MustBerth(t, env, "install", "s1", chart, "--set", "cleanup.weight=7")

	hook := berthtest.RecordedHook(t, berthtest.LastRecord(t, env, "s1"), "cleanup")
	wantPolicies := []releasev1.HookDeletePolicy{releasev1.HookBeforeHookCreation, releasev1.HookSucceeded}
	if hook.Weight != 7 || !slices.Equal(hook.DeletePolicies, wantPolicies) {
		t.Errorf("recorded cleanup hook has weight %d and policies %v, want 7 and %v (from values)", hook.Weight, hook.DeletePolicies, wantPolicies)
	}

	// The hook's first Pod does the work (the test does it for it), then is evicted; the Job
	// controller retries, and the retry finds the work done.
	done := make(chan error, 1)
	go func() { done <- doWorkOnFirstPod(ctx, env, "cleanup") }()
	_, stderr := berthtest.MustBerth(t, env, "uninstall", "s1")
	if err := <-done; err != nil {
		t.Fatalf("delete the ConfigMap as the hook would: %v", err)
	}

	for _, want := range []string{"(attempt 1 of 3) failed: Evicted", "the Job controller retries it", "post-delete hook Job.batch/" + env.Namespace + "/cleanup: Job completed"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("uninstall output does not say %q:\n%s", want, stderr)
		}
	}
	berthtest.AssertNotRecorded(t, env, "s1")
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "work", "settings")
	berthtest.AssertNoObject(t, env, "batch/v1", "Job", "cleanup") // hook-succeeded
}

func TestS1CleanupHookFinallyFails(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "s1", cleanupChart)
	berthtest.MustBerth(t, env, "install", "s1", chart, "--set", "cleanup.outcome=fail", "--set", "cleanup.attempts=",
		"--set", `cleanup.deletePolicy=before-hook-creation\,hook-succeeded\,hook-failed`)

	var stderr berthtest.LockedBuffer
	_, err := berthtest.BerthStreaming(t, env, &stderr, "uninstall", "s1")
	if err == nil {
		t.Fatalf("uninstall succeeded although its post-delete hook fails every time:\n%s", stderr.String())
	}
	msg := err.Error()
	for _, want := range []string{
		"post-delete hook Job.batch/" + env.Namespace + "/cleanup failed", "BackoffLimitExceeded",
		"Failed", "exit code 3", "logs", `configmap "work" deleted`, "events:", "berth uninstall s1 goes on",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("uninstall error does not say %q:\n%s", want, msg)
		}
	}
	if n := strings.Count(stderr.String(), "; the Job controller retries it"); n != 2 {
		t.Errorf("uninstall output tells of %d retries, want 2 (backoffLimit 2):\n%s", n, stderr.String())
	}
	if rel := berthtest.LastRecord(t, env, "s1"); rel.Info.Status != release.StatusUninstalling {
		t.Errorf("after the failed hook, release s1 is %s, want uninstalling", rel.Info.Status)
	}
	berthtest.AssertNoObject(t, env, "batch/v1", "Job", "cleanup") // hook-failed
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "settings")

	// The hook cannot succeed (its values cannot change on an uninstalling release): uninstall
	// again without hooks finishes the job.
	berthtest.MustBerth(t, env, "uninstall", "s1", "--no-hooks")
	berthtest.AssertNotRecorded(t, env, "s1")
}

// doWorkOnFirstPod waits for the first Pod of the hook Job named job, then deletes the
// ConfigMap "work" as that Pod would.
func doWorkOnFirstPod(ctx context.Context, env *testenv.Env, job string) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
		return err == nil && len(pods.Items) > 0, nil
	})
	if err != nil {
		return err
	}
	err = env.Client.CoreV1().ConfigMaps(env.Namespace).Delete(ctx, "work", metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return errors.New("the ConfigMap work was already gone before the hook ran")
	}
	return err
}
