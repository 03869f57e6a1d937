package cluster_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		_, res, err := c.RunHook(ctx, obj, nil)
		if err != nil || res.State != readiness.Ready {
			t.Fatalf("run %d: %v, %v; want the Job seen complete", i, res, err)
		}
	}
}

func TestRunHookReportsFailure(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	obj := object(t, hookJob(t, env.Namespace, "broken", "devcluster.berth.dev/run: 0s, devcluster.berth.dev/outcome: fail", ""))
	_, res, err := c.RunHook(deadline(t), obj, nil)
	if err != nil || res.State != readiness.Failed || !strings.Contains(res.Message, "BackoffLimitExceeded") {
		t.Fatalf("RunHook = %+v, %v; want Failed with the Job's reason", res, err)
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
	_, res, err := c.RunHook(ctx, obj, progress)
	if err != nil || res.State != readiness.Failed || !strings.Contains(res.Message, "deleted before it finished") {
		t.Fatalf("RunHook = %+v, %v; want Failed saying it was deleted", res, err)
	}
	if !strings.Contains(res.Message, "1 active") {
		t.Errorf("message %q does not say what was last seen", res.Message)
	}
}
