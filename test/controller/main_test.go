// Package controller_test runs berth's controller as a user does, as a process of its own
// (berth controller), against the local control plane: killed at random moments, adopting what
// Helm installed, acting with no rights but its Releases' ServiceAccounts'.
package controller_test

import (
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
