package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// migrateChart has a pre-upgrade hook Job that is only deleted before its next run: each run's
// Job stays until the next upgrade. Its Pods are slow to terminate.
var migrateChart = map[string]string{
	"values.yaml": "mark: 0\n",
	"templates/app.yaml": `
apiVersion: v1
kind: ConfigMap
metadata: {name: app}
data: {mark: {{ .Values.mark | quote }}}
`,
	"templates/migrate.yaml": `
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    helm.sh/hook: pre-upgrade
    helm.sh/hook-delete-policy: before-hook-creation
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        devcluster.berth.dev/run: 0s
        devcluster.berth.dev/terminate: 5s
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: example.invalid/migrate}]
`,
}

// holdFinalizer is a finalizer of someone else's that keeps the previous Job terminating.
const holdFinalizer = "example.com/hold"

func TestS7RerunWaitsForPreviousHook(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		// terminating: the previous Job is being deleted, held by a foreign finalizer.
		terminating bool
	}{
		{name: "previous-exists"},
		{name: "previous-terminating", terminating: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t)
			ctx := t.Context()
			chart := berthtest.WriteChart(t, "s7", migrateChart)
			berthtest.MustBerth(t, env, "install", "s7", chart)
			berthtest.MustBerth(t, env, "upgrade", "s7", chart, "--set", "mark=1")
			jobs := env.Client.BatchV1().Jobs(env.Namespace)
			previous, err := jobs.Get(ctx, "migrate", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the first run's Job: %v", err)
			}

			if c.terminating {
				patch := fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, holdFinalizer)
				if _, err := jobs.Patch(ctx, "migrate", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
				prop := metav1.DeletePropagationForeground
				if err := jobs.Delete(ctx, "migrate", metav1.DeleteOptions{PropagationPolicy: &prop}); err != nil {
					t.Fatal(err)
				}
			}

			// Once berth says it waits for the previous Job, its finalizer is removed.
			var stderr berthtest.LockedBuffer
			released := make(chan error, 1)
			go func() {
				if !c.terminating {
					released <- nil
					return
				}
				released <- wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
					if out := stderr.String(); !strings.Contains(out, "waiting for finalizers") || !strings.Contains(out, holdFinalizer) {
						return false, nil
					}
					_, err := jobs.Patch(ctx, "migrate", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
					return err == nil, nil
				})
			}()
			_, err = berthtest.BerthStreaming(t, env, &stderr, "upgrade", "s7", chart, "--set", "mark=2")
			if rerr := <-released; rerr != nil {
				t.Fatalf("remove the finalizer once berth waits for it: %v\n%s", rerr, stderr.String())
			}
			if err != nil {
				t.Fatalf("upgrade with the previous hook Job still there: %v\n%s", err, stderr.String())
			}
			for _, bad := range []string{"already exists", "is being deleted"} {
				if strings.Contains(stderr.String(), bad) {
					t.Errorf("upgrade output says %q:\n%s", bad, stderr.String())
				}
			}
			current, err := jobs.Get(ctx, "migrate", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the second run's Job: %v", err)
			}
			if current.UID == previous.UID {
				t.Errorf("Job migrate still has the first run's UID %s: no new run was created", current.UID)
			}
			if rel := berthtest.LastRecord(t, env, "s7"); rel.Info.Status != "deployed" || berthtest.RecordedHook(t, rel, "migrate").LastRun.Phase != "Succeeded" {
				t.Errorf("revision %d is %s, hook %q; want deployed and Succeeded", rel.Version, rel.Info.Status, berthtest.RecordedHook(t, rel, "migrate").LastRun.Phase)
			}
		})
	}
}
