package lifecycle

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// changeEntry is one entry of berth.changes in berth's -o json of an operation.
type changeEntry struct {
	Object struct {
		Group, Kind, Namespace, Name string
	} `json:"object"`
	Change    string `json:"change"`
	Operation string `json:"operation"`
	Revision  int    `json:"revision"`
}

// line is the entry as "Kind/name change operation revision", for readable diffs.
func (c changeEntry) line() string {
	kind := c.Object.Kind
	if c.Object.Group != "" {
		kind += "." + c.Object.Group
	}
	return fmt.Sprintf("%s/%s %s %s %d", kind, c.Object.Name, c.Change, c.Operation, c.Revision)
}

// operationJSON reads berth's -o json of an operation: helm's keys, and berth's change list as
// lines.
func operationJSON(t *testing.T, stdout string) (map[string]json.RawMessage, []string) {
	t.Helper()
	var out map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("-o json: %v\n%s", err, stdout)
	}
	var berth struct {
		Changes []changeEntry `json:"changes"`
	}
	if err := json.Unmarshal(out["berth"], &berth); err != nil {
		t.Fatalf("-o json: key berth: %v\n%s", err, stdout)
	}
	var lines []string
	for _, c := range berth.Changes {
		lines = append(lines, c.line())
	}
	return out, lines
}

// TestOperationJSONListsChangesInPlanOrder upgrades a release changing one value with -o json:
// helm's keys are all there, and berth.changes lists every object of the release once, in the
// order of the plan's apply steps (the stages of Helm's install order), the ConfigMap configured and the rest
// unchanged. A rollback lists them the same way, and an uninstall lists them deleted, in the
// order of its delete steps (Helm's uninstall order).
func TestOperationJSONListsChangesInPlanOrder(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "unchanged", unchangedChart)
	berthtest.MustBerth(t, env, "install", "web", chart, "--wait")

	stdout, stderr := berthtest.MustBerth(t, env, "upgrade", "web", chart, "--set", "greeting=bye", "-o", "json")
	out, got := operationJSON(t, stdout)
	for _, key := range []string{"name", "info", "chart", "config", "manifest", "version", "namespace"} {
		if _, ok := out[key]; !ok {
			t.Errorf("upgrade -o json has no key %q, as helm's has:\n%s", key, stdout)
		}
	}
	// The stages of Helm's install order: the Secret waits for the ServiceAccount, the
	// Deployment for all.
	want := []string{
		"ServiceAccount/web unchanged upgrade 2",
		"ConfigMap/settings configured upgrade 2",
		"Service/web unchanged upgrade 2",
		"Secret/creds unchanged upgrade 2",
		"Deployment.apps/web unchanged upgrade 2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("upgrade -o json: berth.changes (-want +got):\n%s", diff)
	}
	if want := "done: 1 configured, 4 unchanged in"; !strings.Contains(stderr, want) {
		t.Errorf("upgrade printed on stderr:\n%s\nwant %q", stderr, want)
	}

	stdout, _ = berthtest.MustBerth(t, env, "rollback", "web", "1", "-o", "json")
	out, got = operationJSON(t, stdout)
	if v := string(out["version"]); v != "3" {
		t.Errorf("rollback -o json: version %s, want 3", v)
	}
	for i := range want {
		want[i] = strings.Replace(want[i], "upgrade 2", "rollback 3", 1)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rollback -o json: berth.changes (-want +got):\n%s", diff)
	}

	stdout, _ = berthtest.MustBerth(t, env, "uninstall", "web", "-o", "json")
	out, got = operationJSON(t, stdout)
	if _, ok := out["deleted"]; !ok {
		t.Errorf("uninstall -o json has no key deleted:\n%s", stdout)
	}
	want = []string{
		"Service/web deleted uninstall 3",
		"Deployment.apps/web deleted uninstall 3",
		"ConfigMap/settings deleted uninstall 3",
		"Secret/creds deleted uninstall 3",
		"ServiceAccount/web deleted uninstall 3",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("uninstall -o json: berth.changes (-want +got):\n%s", diff)
	}
}
