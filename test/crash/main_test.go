// Package crash holds berth's fault-injection tests: berth runs as a subprocess against a local
// control plane and is killed (SIGKILL) at every journal write and at random moments of install,
// upgrade, rollback and uninstall; one follow-up command must then bring the release to a
// consistent state. Each kill counts as mid-operation when berth was still running and the
// operation's journal, written by it, was there. It also races two processes on one release and
// recovers a release Helm left pending.
//
// BERTH_CRASH_TRIALS sets the number of random moments per operation (default 5);
// BERTH_CRASH_SEED repeats the random moments of an earlier run.
package crash

import (
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
