// Package e2e holds scenario tests that run berth against a local control plane.
package e2e

import (
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
