package lifecycle

import (
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// unboundChart has a claim no provisioner binds: it never becomes ready, which only waiting
// finds out.
var unboundChart = map[string]string{
	"Chart.yaml": "apiVersion: v2\nname: unbound\nversion: 0.1.0\n",
	"templates/claim.yaml": `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  storageClassName: no-such-class
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`,
	"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n",
}

// TestAtomicImpliesWait installs with --atomic, Helm's deprecated spelling of
// --rollback-on-failure, and no --wait: as in Helm, rolling back on failure implies waiting, so
// the claim that never binds is waited for, and the install undone when time runs out.
func TestAtomicImpliesWait(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "unbound", unboundChart)

	stdout, stderr, err := berthtest.Berth(t, env, "install", "unbound", chart, "--atomic", "--timeout", "3s")
	if err == nil {
		t.Fatal("install --atomic of a chart whose claim never binds succeeded")
	}
	// The warning goes to stderr, out of the way of -o json.
	if !strings.Contains(stderr, "--atomic has been deprecated, use --rollback-on-failure instead") || strings.Contains(stdout, "deprecated") {
		t.Errorf("the deprecation warning for --atomic is not on stderr alone:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	berthtest.AssertNotRecorded(t, env, "unbound")
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "settings")
	berthtest.AssertNoObject(t, env, "v1", "PersistentVolumeClaim", "data")
}
