package lifecycle

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	berthlifecycle "github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// podTemplate is the pod template annotations of the live Deployment web.
func podTemplate(t *testing.T, env *testenv.Env) map[string]string {
	t.Helper()
	d, err := env.Client.AppsV1().Deployments(env.Namespace).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Annotations
}

// assertHelmHistory checks the release's history as Helm v4's own helm history -o json prints
// it: the revisions, their statuses, and the start of their descriptions.
func assertHelmHistory(t *testing.T, env *testenv.Env, name string, want ...revision) {
	t.Helper()
	got := parseHistory(t, berthtest.MustHelm(t, env, "history", name, "-o", "json"))
	if len(got) != len(want) {
		t.Fatalf("helm history %s:\n got %+v\nwant %+v", name, got, want)
	}
	for i := range want {
		if got[i].Revision != want[i].Revision || got[i].Status != want[i].Status || !strings.HasPrefix(got[i].Description, want[i].Description) {
			t.Errorf("helm history %s, entry %d:\n got %+v\nwant %+v (description: its start)", name, i, got[i], want[i])
		}
	}
}

// TestW1DegradedAfterReadyRollsBack is scenario W1: an upgrade becomes Ready, and twenty seconds
// later its Pods start crash-looping. With --watch-for 1m --rollback-on-failure, the upgrade
// fails naming the Pod, and the release is back on revision 1 (revision 3, its rollback, says
// why) within the operation's deadline; helm's own history shows what happened.
func TestW1DegradedAfterReadyRollsBack(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "watched", berthtest.WatchedChart("panic: the new settings are invalid"))
	berthtest.MustBerth(t, env, "install", "web", chart, "--wait")

	start := time.Now()
	_, stderr, err := berthtest.Berth(t, env, "upgrade", "web", chart, "--set", "version=2", "--set", "crash=true",
		"--watch-for", "1m", "--rollback-on-failure", "--timeout", "3m")
	took := time.Since(start)
	if err == nil {
		t.Fatalf("the upgrade whose Pods crash-loop in the window succeeded:\n%s", stderr)
	}
	msg := err.Error()
	t.Logf("the upgrade's error:\n%s", msg)
	for _, want := range []string{"Deployment.apps/" + env.Namespace + "/web", ": Pod web-", "CrashLoopBackOff", "log of web-",
		"rolled back", "revision 2 is recorded failed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the upgrade's error does not say %q:\n%s", want, msg)
		}
	}
	for _, want := range []string{"watch/2: watch 2 objects for 1m0s", "watch/2: failed after"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the upgrade's progress does not say %q:\n%s", want, stderr)
		}
	}
	// The Pods crash from 20 s after Ready: the window names it within its minute, not at its end.
	m := regexp.MustCompile(`watch/2: failed after (\S+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("the upgrade's progress does not say when its watch failed:\n%s", stderr)
	}
	if d, err := time.ParseDuration(m[1]); err != nil || d >= time.Minute {
		t.Errorf("the watch window of 1m failed after %s, want within it", m[1])
	}
	t.Logf("the upgrade and its rollback took %s", took.Round(time.Millisecond))
	failed := `Upgrade "web" failed: revision 2 degraded in its watch window: Deployment.apps/` + env.Namespace + "/web: "
	back := "Rollback to 1: revision 2 degraded in its watch window: Deployment.apps/" + env.Namespace + "/web: "
	assertHelmHistory(t, env, "web",
		revision{Revision: 1, Status: "superseded", Description: "Install complete"},
		revision{Revision: 2, Status: "failed", Description: failed},
		revision{Revision: 3, Status: "deployed", Description: back})
	if a := podTemplate(t, env); a["version"] != "1" || a["devcluster.berth.dev/outcome"] != "" {
		t.Errorf("after the rollback the Deployment's pod template is %v, want revision 1's", a)
	}
	berthtest.MustBerth(t, env, "status", "web")
}

// TestWatchRegressionWithoutRollback: without --rollback-on-failure, the revision that regressed
// is recorded failed with the reason, and the release is left as it is.
func TestWatchRegressionWithoutRollback(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "watched", berthtest.WatchedChart("panic: the new settings are invalid"))
	berthtest.MustBerth(t, env, "install", "web", chart, "--wait")
	_, stderr, err := berthtest.Berth(t, env, "upgrade", "web", chart, "--set", "version=2", "--set", "crash=true", "--set", "run=5s",
		"--watch-for", "1m")
	if err == nil {
		t.Fatalf("the upgrade whose Pods crash-loop in the window succeeded:\n%s", stderr)
	}
	if !strings.Contains(err.Error(), "left as it is") {
		t.Errorf("the upgrade's error does not say the release is left as it is:\n%v", err)
	}
	// As in Helm, a revision that failed supersedes nothing.
	assertHelmHistory(t, env, "web",
		revision{Revision: 1, Status: "deployed", Description: "Install complete"},
		revision{Revision: 2, Status: "failed", Description: `Upgrade "web" failed: revision 2 degraded in its watch window: `})
	if a := podTemplate(t, env); a["version"] != "2" {
		t.Errorf("the failed revision was undone: the pod template is %v, want revision 2's", a)
	}
}

// TestWatchHealthyUpgradeAndRollback: an upgrade and a rollback whose objects stay ready through
// their window are recorded deployed once it ends, and say so.
func TestWatchHealthyUpgradeAndRollback(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "watched", berthtest.WatchedChart("panic: the new settings are invalid"))
	berthtest.MustBerth(t, env, "install", "web", chart, "--watch-for", "3s")
	// The plan a server dry run prints, and the diff, show the window.
	_, plan := berthtest.MustBerth(t, env, "upgrade", "web", chart, "--set", "version=2", "--watch-for", "30s", "--dry-run=server")
	if !strings.Contains(plan, ". watch/2 (watch 2 objects for 30s before revision 2 is recorded deployed") {
		t.Errorf("the server dry run's plan does not show the window:\n%s", plan)
	}
	diff, _ := berthtest.MustBerth(t, env, "diff", "upgrade", "web", chart, "--set", "version=2", "--watch-for", "30s")
	if !strings.Contains(diff, "revision 2, deployed once its objects stayed ready for 30s") {
		t.Errorf("the diff does not show the window:\n%s", diff)
	}
	_, stderr := berthtest.MustBerth(t, env, "upgrade", "web", chart, "--set", "version=2", "--watch-for", "3s")
	for _, want := range []string{"watch/2: watch 2 objects for 3s", "watch/2: no regression"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the upgrade's progress does not say %q:\n%s", want, stderr)
		}
	}
	berthtest.MustBerth(t, env, "rollback", "web", "1", "--watch-for", "3s")
	assertHelmHistory(t, env, "web",
		revision{Revision: 1, Status: "superseded", Description: "Install complete"},
		revision{Revision: 2, Status: "superseded", Description: "Upgrade complete"},
		revision{Revision: 3, Status: "deployed", Description: "Rollback to 1"})
}

// TestWatchRollbackRegresses: a rollback to a revision whose Pods crash-loop, with a window, is
// recorded failed; nothing rolls a rollback back.
func TestWatchRollbackRegresses(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "watched", berthtest.WatchedChart("panic: the new settings are invalid"))
	berthtest.MustBerth(t, env, "install", "web", chart, "--set", "crash=true", "--set", "run=5s")
	berthtest.MustBerth(t, env, "upgrade", "web", chart, "--set", "version=2", "--wait")
	_, stderr, err := berthtest.Berth(t, env, "rollback", "web", "1", "--watch-for", "1m")
	if err == nil {
		t.Fatalf("the rollback to crash-looping Pods succeeded:\n%s", stderr)
	}
	assertHelmHistory(t, env, "web",
		revision{Revision: 1, Status: "superseded", Description: "Install complete"},
		revision{Revision: 2, Status: "deployed", Description: "Upgrade complete"},
		revision{Revision: 3, Status: "failed", Description: `Rollback "web" failed: revision 3 degraded in its watch window: `})
}

// TestWatchRecordPendingInWindow: while the window runs, the revision is recorded
// pending-upgrade under berth's lease, so helm upgrade is refused; the upgrade then ends
// deployed.
func TestWatchRecordPendingInWindow(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "watched", berthtest.WatchedChart("panic: the new settings are invalid"))
	berthtest.MustBerth(t, env, "install", "web", chart, "--wait")

	started := windowStarted(t, env, "web")
	done := make(chan error, 1)
	var stderr berthtest.LockedBuffer
	go func() {
		_, err := berthtest.BerthStreaming(t, env, &stderr, "upgrade", "web", chart, "--set", "version=2", "--watch-for", "30s")
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the upgrade ended before its window was seen to start: %v\n%s", err, stderr.String())
	}
	if rel := berthtest.LastRecord(t, env, "web"); rel.Version != 2 || rel.Info.Status != release.StatusPendingUpgrade {
		t.Errorf("in the window, revision %d is %s, want 2 pending-upgrade", rel.Version, rel.Info.Status)
	}
	// berth status says what the window watches and what is left of it.
	status, _ := berthtest.MustBerth(t, env, "status", "web")
	if !strings.Contains(status, "WATCH WINDOW: revision 2: 2 object(s) watched for regressions for 30s") || !strings.Contains(status, " left") {
		t.Errorf("berth status in the window does not show it:\n%s", status)
	}
	_, helmErr, err := berthtest.Helm(t, env, "upgrade", "web", chart, "--set", "version=3")
	if err == nil || !strings.Contains(helmErr+err.Error(), "another operation (install/upgrade/rollback) is in progress") {
		t.Errorf("helm upgrade in the window: %v, want it refused as another operation is in progress\n%s", err, helmErr)
	}
	if err := <-done; err != nil {
		t.Fatalf("the upgrade: %v\n%s", err, stderr.String())
	}
	assertHelmHistory(t, env, "web",
		revision{Revision: 1, Status: "superseded", Description: "Install complete"},
		revision{Revision: 2, Status: "deployed", Description: "Upgrade complete"})
}

// windowStarted returns a channel closed once the journal of release name says its watch window
// started, as a watch of the journal's Secret delivers its writes.
func windowStarted(t *testing.T, env *testenv.Env, name string) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	secrets := env.Client.CoreV1().Secrets(env.Namespace)
	sel := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", release.JournalKey(name)).String()}
	list, err := secrets.List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	sel.ResourceVersion = list.ResourceVersion
	w, err := secrets.Watch(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	journals := release.NewJournals(env.Client.CoreV1(), env.Namespace)
	out := make(chan struct{})
	go func() {
		defer w.Stop()
		for e := range w.ResultChan() {
			if _, ok := e.Object.(*corev1.Secret); !ok {
				continue
			}
			if j, err := journals.Get(ctx, name); err == nil {
				if win := berthlifecycle.WindowOf(j); win != nil && !win.Started.IsZero() {
					close(out)
					return
				}
			}
		}
	}()
	return out
}
