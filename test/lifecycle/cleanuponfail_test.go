package lifecycle

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// cleanupChart adds ConfigMaps with its values, and a hook that fails after an upgrade or a
// rollback applied them.
var cleanupChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: tidy\nversion: 0.1.0\n",
	"values.yaml": "extra: false\nmore: false\nfail: false\n",
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: kept}
{{- if .Values.extra }}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: extra}
{{- end }}
{{- if .Values.more }}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: more}
---
apiVersion: v1
kind: Service
metadata: {name: more}
spec: {ports: [{port: 80}]}
{{- end }}
`,
	"templates/hook.yaml": `{{- if .Values.fail }}
apiVersion: v1
kind: Pod
metadata:
  name: refuse
  annotations:
    helm.sh/hook: post-upgrade,post-rollback
    helm.sh/hook-delete-policy: before-hook-creation
    devcluster.berth.dev/outcome: fail
spec:
  restartPolicy: Never
  containers: [{name: run, image: example.invalid/run}]
{{- end }}
`,
}

// TestCleanupOnFailMatchesHelm: an upgrade that fails with --cleanup-on-fail deletes the objects
// it created, and only those: an object a failed upgrade left before is kept; without the flag
// nothing is deleted. A rollback records its --description and, as in helm, cleans up only when
// applying its objects fails: a failed post-rollback hook leaves them. The records and objects
// come out as with helm.
func TestCleanupOnFailMatchesHelm(t *testing.T) {
	t.Parallel()
	chart := berthtest.WriteChart(t, "tidy", cleanupChart)
	type outcome struct {
		History []revision
		// Objects say which ConfigMaps (and the Service) exist after each step.
		AfterFailed, AfterCleanup, AfterRollback, AfterFailedRollback map[string]bool
		Message                                                       bool
	}
	fromHelm, fromBerth := twins(t, func(t *testing.T, tl tool, env *testenv.Env) outcome {
		var o outcome
		tl.must(t, env, "install", "c", chart)
		tl.mustFail(t, env, "upgrade", "c", chart, "--set", "extra=true,fail=true")
		o.AfterFailed = tidyObjects(t, env)
		tl.mustFail(t, env, "upgrade", "c", chart, "--set", "extra=true,more=true,fail=true", "--cleanup-on-fail")
		o.AfterCleanup = tidyObjects(t, env)
		tl.must(t, env, "rollback", "c", "1", "--description", "back to the first")
		o.AfterRollback = tidyObjects(t, env)
		tl.mustFail(t, env, "rollback", "c", "3", "--cleanup-on-fail")
		o.AfterFailedRollback = tidyObjects(t, env)
		// The failed rollback's revision is left out: helm leaves it pending-rollback when a
		// post-rollback hook fails, berth records it failed.
		o.History = helmHistory(t, env, "c", func(r revision) bool { return r.Status != "failed" })[:4]
		return o
	})
	want := outcome{
		AfterFailed:         map[string]bool{"kept": true, "extra": true},
		AfterCleanup:        map[string]bool{"kept": true, "extra": true},
		AfterRollback:       map[string]bool{"kept": true},
		AfterFailedRollback: map[string]bool{"kept": true, "extra": true, "more": true, "service/more": true},
		History: []revision{{1, "superseded", "Install complete"}, {2, "failed", ""}, {3, "failed", ""},
			{4, "deployed", "back to the first"}},
	}
	if diff := cmp.Diff(want, fromHelm); diff != "" {
		t.Errorf("helm's outcome is not what the test expects of it (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(fromHelm, fromBerth); diff != "" {
		t.Errorf("berth's outcome differs from helm's (-helm +berth):\n%s", diff)
	}
}

// tidyObjects says which of cleanupChart's objects exist.
func tidyObjects(t *testing.T, env *testenv.Env) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, name := range []string{"kept", "extra", "more"} {
		if configMapData(t, env, name) != nil {
			out[name] = true
		}
	}
	if _, err := env.Client.CoreV1().Services(env.Namespace).Get(t.Context(), "more", metav1.GetOptions{}); err == nil {
		out["service/more"] = true
	}
	return out
}

// TestCleanupOnFailSays: berth says what it cleaned up, and the objects are gone when
// it returns.
func TestCleanupOnFailSays(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "tidy", cleanupChart)
	berthtest.MustBerth(t, env, "install", "c", chart)
	_, stderr, err := berthtest.Berth(t, env, "upgrade", "c", chart, "--set", "more=true,fail=true", "--cleanup-on-fail")
	if err == nil || !strings.Contains(err.Error(), "cleaned up on failure: the objects it created were deleted") {
		t.Fatalf("upgrade --cleanup-on-fail: %v, want it to say it cleaned up\nstderr:\n%s", err, stderr)
	}
	// The Service and the ConfigMap depend on none of each other: one stage deletes both.
	for _, step := range []string{"cleanup/delete/Service+ConfigMap", "cleanup/wait-absent"} {
		if !strings.Contains(stderr, step+":") {
			t.Errorf("the cleanup did not run step %s:\n%s", step, stderr)
		}
	}
	if got := tidyObjects(t, env); !cmp.Equal(got, map[string]bool{"kept": true}) {
		t.Errorf("objects after the cleanup: %v, want kept alone", got)
	}
}
