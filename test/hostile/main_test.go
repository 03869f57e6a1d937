// Package hostile_test runs berth controller as a process of its own, with four workers, for
// the Releases of several namespaces, while one namespace's Releases do what a hostile tenant
// would (H1–H4): the controller must stay up within its chart's memory limit, every other
// Release must go on, and nothing of one tenant may reach another.
package hostile_test

import (
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
