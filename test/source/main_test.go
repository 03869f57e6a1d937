// Package source holds end-to-end tests of charts from repositories: berth's repo, search,
// pull, show and dependency commands against chart repositories served by the tests, installs
// and upgrades from them on a local control plane, what a bad source gets, and interop with
// Helm v4's own binary on the same Helm files.
package source

import (
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
