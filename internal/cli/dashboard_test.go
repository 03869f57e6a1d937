package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDashboardRefusesBadFlags: a bad port, address, timeout or context is refused, naming it,
// before anything listens.
func TestDashboardRefusesBadFlags(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: one, context: {cluster: c, user: u}}, {name: two, context: {cluster: c, user: u}}]
current-context: one
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--port", "70000"}, "invalid --port 70000"},
		{[]string{"--port", "-1"}, "invalid --port -1"},
		{[]string{"--address", "example.com"}, `invalid --address "example.com"`},
		{[]string{"--timeout", "0s"}, "invalid --timeout"},
		{[]string{"--kube-context", "three"}, `context "three" is not in the kubeconfig`},
	} {
		_, _, err := run(t, append([]string{"dashboard", "--no-browser", "--kubeconfig", kubeconfig}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("berth dashboard %v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
