package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/lifecycle"
)

// TestExitCode checks the exit code of what Run returns: an interrupted operation is 130 whatever
// else its error says, a blocked one 3.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, 0},
		{"failure", errors.New("upgrade: step apply/deployments: refused"), 1},
		{"blocked", fmt.Errorf("uninstall: %w", &engine.BlockedError{}), ExitBlocked},
		{"interrupted", fmt.Errorf("upgrade: %w", lifecycle.ErrInterrupted), ExitInterrupted},
		{"interrupted while blocked", errors.Join(&engine.BlockedError{}, lifecycle.ErrInterrupted), ExitInterrupted},
	} {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("%s: ExitCode(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}
