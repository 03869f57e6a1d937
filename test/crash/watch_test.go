package crash

import (
	"context"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// killInWindow starts berth with args, an upgrade with a watch window, and kills it once its
// journal says the window started.
func killInWindow(t *testing.T, env *testenv.Env, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := watchJournal(ctx, t, env, name)
	p := berthProcess(t, env, nil, args...)
	for ev := range events {
		if w := lifecycle.WindowOf(ev.journal); w != nil && !w.Started.IsZero() {
			break
		}
	}
	p.kill()
	if r := p.wait(); !r.killed {
		t.Fatalf("berth %v was not killed in its window: %v\n%s", args, r.err, r.out)
	}
	rel := berthtest.LastRecord(t, env, name)
	if rel.Info.Status != release.StatusPendingUpgrade {
		t.Fatalf("killed in the window, revision %d is %s, want pending-upgrade", rel.Version, rel.Info.Status)
	}
}

// TestWatchWindowResumedAfterCrash kills an upgrade in its watch window: berth recover goes on
// with the window, for what is left of it, and records the revision deployed once it ends.
func TestWatchWindowResumedAfterCrash(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "watched", berthtest.WatchedChart("panic: the new settings are invalid"))
	mustBerth(t, env, "install", "web", chart, "--wait")
	killInWindow(t, env, "web", "upgrade", "web", chart, "--set", "version=2", "--watch-for", "10s")

	out := mustBerth(t, env, "recover", "web")
	for _, want := range []string{"the watch window of revision 2 started at", "watch/2: no regression"} {
		if !strings.Contains(out, want) {
			t.Errorf("berth recover does not say %q:\n%s", want, out)
		}
	}
	if rel := berthtest.LastRecord(t, env, "web"); rel.Version != 2 || rel.Info.Status != release.StatusDeployed {
		t.Errorf("after recovery, revision %d is %s, want 2 deployed", rel.Version, rel.Info.Status)
	}
}

// TestWatchWindowRegressionAfterCrash kills an upgrade in the watch window of a revision whose
// Pods crash-loop soon after: the next upgrade finishes the interrupted one first, whose window
// sees the regression and records revision 2 failed with it.
func TestWatchWindowRegressionAfterCrash(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "watched", berthtest.WatchedChart("panic: the new settings are invalid"))
	mustBerth(t, env, "install", "web", chart, "--wait")
	upgrade := []string{"upgrade", "web", chart, "--set", "version=2", "--set", "crash=true", "--set", "run=3s", "--watch-for", "1m"}
	killInWindow(t, env, "web", upgrade...)

	r := berth(t, env, nil, upgrade...)
	if r.err == nil {
		t.Fatalf("the upgrade after the crash succeeded although its Pods crash-loop:\n%s", r.out)
	}
	rel, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).Get(t.Context(), "web", 2)
	if err != nil {
		t.Fatal(err)
	}
	if rel.Info.Status != release.StatusFailed || !strings.Contains(rel.Info.Description, "revision 2 degraded in its watch window: Deployment.apps/"+env.Namespace+"/web: Pod web-") {
		t.Errorf("revision 2 after the next upgrade: %s %q, want failed, degraded in its watch window\n%s", rel.Info.Status, rel.Info.Description, r.out)
	}
}
