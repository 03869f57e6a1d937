package cli

import (
	"strings"
	"testing"
)

// TestCRDsFlag: --crds takes skip, create or create-replace, and help shows each command's
// default.
func TestCRDsFlag(t *testing.T) {
	_, _, err := run(t, "install", "web", "./chart", "--crds", "replace")
	if err == nil || !strings.Contains(err.Error(), `invalid --crds "replace": want skip, create or create-replace`) {
		t.Errorf("berth install --crds replace: %v, want the values --crds takes", err)
	}
	for cmd, want := range map[string]string{"install": `(default "create")`, "upgrade": `(default "skip"`} {
		stdout, _, err := run(t, cmd, "--help")
		if err != nil {
			t.Fatalf("berth %s --help: %v", cmd, err)
		}
		line := stdout[strings.Index(stdout, "--crds"):]
		line = line[:strings.Index(line, "\n")]
		if !strings.Contains(line, want) {
			t.Errorf("berth %s --help shows --crds as %q, want %s", cmd, line, want)
		}
	}
	stdout, _, err := run(t, "upgrade", "--help")
	if err != nil || !strings.Contains(stdout, "--force-replace") {
		t.Errorf("berth upgrade --help does not show --force-replace (%v)", err)
	}
}
