package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestServerSideFlags: helm's --server-side and --force-conflicts parse as helm's do, "false"
// (client-side apply) is refused naming why, and --force-conflicts excludes --force-replace.
func TestServerSideFlags(t *testing.T) {
	streams := Streams{In: strings.NewReader(""), Out: new(strings.Builder), ErrOut: new(strings.Builder)}
	commands := map[string]func(Streams) *cobra.Command{
		"install": newInstallCommand, "upgrade": newUpgradeCommand, "rollback": newRollbackCommand,
	}
	for _, tt := range []struct {
		command string
		args    []string
		wantErr string
	}{
		{"install", []string{"--server-side"}, ""},
		{"install", []string{"--server-side=true", "--force-conflicts"}, ""},
		{"install", []string{"--server-side=false"}, "server-side only"},
		{"install", []string{"--server-side=auto"}, "invalid syntax"},
		{"upgrade", []string{"--server-side", "auto"}, ""},
		{"upgrade", []string{"--server-side=true", "--force-conflicts"}, ""},
		{"upgrade", []string{"--server-side", "false"}, "server-side only"},
		{"upgrade", []string{"--server-side", "maybe"}, `must be "true", "false" or "auto"`},
		{"rollback", []string{"--server-side", "auto", "--force-conflicts"}, ""},
		{"rollback", []string{"--server-side", "false"}, "server-side only"},
	} {
		cmd := commands[tt.command](streams)
		err := cmd.ParseFlags(tt.args)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s %v: error %v, want %q", tt.command, tt.args, err, tt.wantErr)
		}
	}
	for _, command := range []string{"install", "upgrade", "rollback"} {
		cmd := commands[command](streams)
		if err := cmd.ParseFlags([]string{"--force-conflicts", "--force-replace"}); err != nil {
			t.Fatal(err)
		}
		if err := cmd.ValidateFlagGroups(); err == nil || !strings.Contains(err.Error(), "force-conflicts") {
			t.Errorf("%s --force-conflicts --force-replace: %v, want them refused together", command, err)
		}
	}
}
