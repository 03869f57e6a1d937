package cli

import (
	"strings"
	"testing"
)

// TestControllerLimitFlagsRefused: a limit that does not parse, or is not positive, is refused
// by name before the controller reaches a cluster.
func TestControllerLimitFlagsRefused(t *testing.T) {
	for _, tc := range []struct{ flag, value string }{
		{"--max-index-size", "lots"},
		{"--max-index-size", "0"},
		{"--max-index-size", "-4Mi"},
		{"--max-timeout", "-1s"},
	} {
		_, _, err := run(t, "controller", "--kubeconfig", "/nonexistent", tc.flag, tc.value)
		if err == nil || !strings.Contains(err.Error(), "invalid "+tc.flag) {
			t.Errorf("berth controller %s %s: %v, want it refused naming %s", tc.flag, tc.value, err, tc.flag)
		}
	}
}
