package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/controller"
)

// TestExplainManagerError: the controller's refusal of allowed signers without required
// verification is worded in the flags that gave them.
func TestExplainManagerError(t *testing.T) {
	err := explainManagerError(fmt.Errorf("options: %w", controller.ErrSignersWithoutRequire))
	for _, flag := range []string{"--allowed-signer", "--allowed-issuer", "--require-verified"} {
		if !strings.Contains(err.Error(), flag) {
			t.Errorf("error %q does not name %s", err, flag)
		}
	}
}
