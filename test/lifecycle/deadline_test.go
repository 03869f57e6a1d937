package lifecycle

import (
	"strings"
	"testing"
	"time"

	berthlifecycle "github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// hangingHooksChart has a pre-rollback hook whose Pod never ends, and, when values ask, a
// pre-upgrade hook whose Pod never ends either.
var hangingHooksChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: hanging\nversion: 0.1.0\n",
	"values.yaml": "hangUpgrade: false\n",
	"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {upgraded: "{{ .Values.hangUpgrade }}"}
`,
	"templates/hooks.yaml": `{{- define "hanging" }}
apiVersion: v1
kind: Pod
metadata:
  name: {{ .name }}
  annotations:
    helm.sh/hook: {{ .event }}
    helm.sh/hook-delete-policy: before-hook-creation
    devcluster.berth.dev/outcome: hang
spec:
  restartPolicy: Never
  containers: [{name: run, image: example.invalid/run}]
{{- end }}
{{- include "hanging" (dict "name" "before-rollback" "event" "pre-rollback") }}
{{- if .Values.hangUpgrade }}
---
{{- include "hanging" (dict "name" "before-upgrade" "event" "pre-upgrade") }}
{{- end }}
`,
}

// TestDeadlineBoundsRollbackOnFailure: an upgrade whose pre-upgrade hook never ends, rolled back
// on failure to a revision whose pre-rollback hook never ends either, ends within its --timeout
// and the grace of its last writes: the rollback gets what is left of the one deadline, not a
// deadline of its own. Nothing is left pending, the lease is given back, and the error says where
// the time ran out and that the rollback did not finish; each failure is recorded by a plan step.
func TestDeadlineBoundsRollbackOnFailure(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "hanging", hangingHooksChart)
	berthtest.MustBerth(t, env, "install", "hanging", chart)

	stderr, statuses := failedUpgradeWithinGrace(t, env, "hanging", chart, "an upgrade whose pre-upgrade hook never ends",
		"--set", "hangUpgrade=true")
	// The failures are recorded by steps of their own plans: the upgrade's revision 2, then the
	// rollback's revision 3.
	for _, want := range []string{"before-upgrade", "before-rollback", "timed out", "rolling back on failure failed",
		"record/failed/2", "record/failed/3"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the error does not say %q:\n%s", want, stderr)
		}
	}
	if statuses[1] != release.StatusDeployed || statuses[2] != release.StatusFailed {
		t.Errorf("revisions %v, want 1 still deployed and 2 failed", statuses)
	}
}

// failedUpgradeWithinGrace runs berth upgrade NAME CHART ARGS... with --rollback-on-failure and a
// --timeout of 20 s, which must fail (what is said of the upgrade if it does not) within its
// --timeout and the operation's grace (berthlifecycle.Grace), leave no revision pending and give
// the release's lease back. It returns the command's stderr and the status of each revision.
func failedUpgradeWithinGrace(t *testing.T, env *testenv.Env, name, chart, what string, args ...string) (string, map[int]release.Status) {
	t.Helper()
	const timeout = 20 * time.Second
	start := time.Now()
	_, stderr, err := berthtest.Berth(t, env, append([]string{"upgrade", name, chart, "--rollback-on-failure", "--timeout", timeout.String()}, args...)...)
	took := time.Since(start)
	if err == nil {
		t.Fatalf("%s succeeded", what)
	}
	t.Logf("upgrade ended after %s:\n%s", took.Round(time.Millisecond), stderr)
	if took > timeout+berthlifecycle.Grace {
		t.Errorf("the upgrade and its rollback took %s, more than --timeout %s and the grace of %s", took.Round(time.Second), timeout, berthlifecycle.Grace)
	}
	history, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).History(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[int]release.Status{}
	for _, rel := range history {
		statuses[rel.Version] = rel.Info.Status
		if strings.HasPrefix(string(rel.Info.Status), "pending-") {
			t.Errorf("revision %d is left %s", rel.Version, rel.Info.Status)
		}
	}
	holder, _, err := release.NewLeases(env.Client.CoordinationV1(), env.Namespace).Holder(t.Context(), name)
	if err != nil || holder != nil {
		t.Errorf("the release's lease is still held by %v (%v)", holder, err)
	}
	return stderr, statuses
}
