// Package lifecycle holds end-to-end tests of berth's release lifecycle (install, upgrade,
// rollback, uninstall) against a local control plane, with real charts, side by side with
// Helm v4's own binary.
package lifecycle

import (
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
