package lifecycle

import (
	"fmt"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// neverReadyChart has 20 Deployments whose Pods the local control plane starts in a year: none
// ever becomes ready. Each revision's Pods carry its value of revision.
var neverReadyChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: neverready\nversion: 0.1.0\n",
	"values.yaml": "revision: \"1\"\n",
	"templates/deployments.yaml": `{{- range $i := until 20 }}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-{{ $i }}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web-{{ $i }}}}
  template:
    metadata:
      labels: {app: web-{{ $i }}}
      annotations: {devcluster.berth.dev/start: 8760h, revision: {{ $.Values.revision | quote }}}
    spec: {containers: [{name: app, image: example.invalid/app}]}
{{- end }}
`,
}

// TestUpgradeOfManyNeverReadyEndsWithinItsTimeoutAndGrace: an upgrade of 20 Deployments that
// never become ready, rolled back on failure to a revision whose Deployments never become ready
// either, ends within its --timeout and the one grace of what is said after it: the rollback gets
// what is left of the deadline, and both failure records share the grace. Nothing is left
// pending, and the lease is given back.
func TestUpgradeOfManyNeverReadyEndsWithinItsTimeoutAndGrace(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "neverready", neverReadyChart)
	berthtest.MustBerth(t, env, "install", "neverready", chart) // no --wait: deployed at once

	stderr, statuses := failedUpgradeWithinGrace(t, env, "neverready", chart, "an upgrade whose Deployments never become ready",
		"--set", "revision=2")
	for _, want := range []string{"rolling back on failure", "record/failed/2"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the error does not say %q:\n%s", want, stderr)
		}
	}
	if statuses[2] != release.StatusFailed {
		t.Errorf("revisions %v, want 2 failed", fmt.Sprint(statuses))
	}
}
