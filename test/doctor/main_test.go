// Package doctor tests berth doctor against a local control plane: each finding reproduced, and a
// namespace with nothing to find.
package doctor

import (
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
