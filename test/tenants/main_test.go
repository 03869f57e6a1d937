// Package tenants_test runs one berth controller for the Releases of several namespaces, as a
// controller shared by tenants does, against a local control plane of its own: what one
// namespace's chart sources do must not stop another's Releases.
package tenants_test

import (
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
