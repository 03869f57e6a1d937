package cli

import (
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/testnet"
)

// TestTimeoutBoundsTheChartFetch: --timeout of install and upgrade is the deadline of the whole
// operation, the fetch of its chart included: a repository that never answers fails the command
// when the deadline comes, saying the fetch timed out, not when one request's own bound does.
func TestTimeoutBoundsTheChartFetch(t *testing.T) {
	useHelmHome(t)
	addr, _ := testnet.SilentListener(t)
	for _, args := range [][]string{
		{"install", "web", "web", "--repo", "http://" + addr, "--timeout", "300ms"},
		{"upgrade", "web", "web", "--install", "--repo", "http://" + addr, "--timeout", "300ms"},
	} {
		_, _, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "the fetch timed out") {
			t.Errorf("berth %s: got %v, want an error naming %s that says the fetch timed out", strings.Join(args, " "), err, addr)
		}
	}
}
