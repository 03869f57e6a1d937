package lifecycle_test

import (
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

// The policy tests run on a fake cluster; the tests of what the lease guards run against the
// local control plane.
func TestMain(m *testing.M) { testenv.Main(m) }
