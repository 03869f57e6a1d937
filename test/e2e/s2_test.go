package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// instantHookChart has a post-upgrade hook Job whose Pod finishes at once; values set its
// ttlSecondsAfterFinished and its outcome.
var instantHookChart = map[string]string{
	"values.yaml": "outcome: succeed\nttl: null\nrevisionMark: 0\n",
	"templates/app.yaml": `
apiVersion: v1
kind: ConfigMap
metadata: {name: app}
data: {mark: {{ .Values.revisionMark | quote }}}
`,
	"templates/hook.yaml": `
apiVersion: batch/v1
kind: Job
metadata:
  name: instant
  annotations: {helm.sh/hook: post-upgrade}
spec:
  backoffLimit: 0
  {{- if not (kindIs "invalid" .Values.ttl) }}
  ttlSecondsAfterFinished: {{ .Values.ttl }}
  {{- end }}
  template:
    metadata:
      annotations:
        devcluster.berth.dev/run: 0s
        devcluster.berth.dev/outcome: {{ .Values.outcome }}
    spec:
      restartPolicy: Never
      containers: [{name: hook, image: example.invalid/hook}]
`,
}

// instantUpgrades is how many upgrades in a row must each see their instant hook finish.
const instantUpgrades = 50

func TestS2InstantHookObservedEveryTime(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		flags []string
		// reaped: the Job is gone once it finished.
		reaped bool
	}{
		{name: "kept"},
		{name: "ttl-0", flags: []string{"--set", "ttl=0"}, reaped: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t)
			chart := berthtest.WriteChart(t, "s2", instantHookChart)
			berthtest.MustBerth(t, env, append([]string{"install", "s2", chart}, c.flags...)...)
			for i := 1; i <= instantUpgrades; i++ {
				_, stderr := berthtest.MustBerth(t, env, append([]string{"upgrade", "s2", chart, "--set", fmt.Sprintf("revisionMark=%d", i)}, c.flags...)...)
				rel := berthtest.LastRecord(t, env, "s2")
				run := berthtest.RecordedHook(t, rel, "instant").LastRun
				if rel.Info.Status != "deployed" || run.Phase != releasev1.HookPhaseSucceeded || run.CompletedAt.IsZero() {
					t.Fatalf("upgrade %d: revision %d is %s with the hook recorded %q, want deployed and Succeeded\n%s",
						i, rel.Version, rel.Info.Status, run.Phase, stderr)
				}
			}
			if c.reaped {
				waitUntil(t, "the hook Job reaped by its TTL", func(ctx context.Context) error {
					_, err := env.Client.BatchV1().Jobs(env.Namespace).Get(ctx, "instant", metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						return nil
					}
					return fmt.Errorf("Job instant still exists (%v)", err)
				})
			}
			assertNoBerthFinalizers(t, env)
		})
	}
}

func TestS2HookDeletedByOthersWhileRunning(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ctx := t.Context()
	chart := berthtest.WriteChart(t, "s2", instantHookChart)
	berthtest.MustBerth(t, env, "install", "s2", chart) // no post-upgrade hook runs at install

	// Someone else deletes the hook Job while it runs.
	deleted := make(chan error, 1)
	go func() {
		deleted <- wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
			prop := metav1.DeletePropagationBackground
			err := env.Client.BatchV1().Jobs(env.Namespace).Delete(ctx, "instant", metav1.DeleteOptions{PropagationPolicy: &prop})
			return err == nil, nil
		})
	}()
	var stderr berthtest.LockedBuffer
	_, err := berthtest.BerthStreaming(t, env, &stderr, "upgrade", "s2", chart, "--set", "outcome=hang", "--timeout", "10m")
	if derr := <-deleted; derr != nil {
		t.Fatalf("delete the hook Job: %v", derr)
	}
	if err == nil {
		t.Fatalf("upgrade succeeded although its hook was deleted before it finished:\n%s", stderr.String())
	}
	msg := err.Error()
	if !strings.Contains(msg, "post-upgrade hook Job.batch/"+env.Namespace+"/instant was deleted before it finished") {
		t.Errorf("upgrade error does not say the hook was deleted before it finished:\n%s", msg)
	}
	if strings.Contains(msg, "timed out") {
		t.Errorf("upgrade error speaks of a timeout: berth waited for a hook that was gone:\n%s", msg)
	}
	rel := berthtest.LastRecord(t, env, "s2")
	if run := berthtest.RecordedHook(t, rel, "instant").LastRun; rel.Info.Status != "failed" || run.Phase != releasev1.HookPhaseFailed {
		t.Errorf("revision %d is %s with the hook recorded %q, want failed and Failed", rel.Version, rel.Info.Status, run.Phase)
	}
	assertNoBerthFinalizers(t, env)
}

// assertNoBerthFinalizers fails the test when a Job or Pod of the test's namespace carries a
// finalizer of berth's.
func assertNoBerthFinalizers(t *testing.T, env *testenv.Env) {
	t.Helper()
	for _, kind := range []struct{ apiVersion, kind string }{{"batch/v1", "Job"}, {"v1", "Pod"}, {"v1", "ConfigMap"}} {
		list, err := env.Resource(t, kind.apiVersion, kind.kind).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range list.Items {
			for _, f := range obj.GetFinalizers() {
				if strings.Contains(f, "berth") {
					t.Errorf("%s %s carries berth's finalizer %s", kind.kind, obj.GetName(), f)
				}
			}
		}
	}
}
