package controller_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestControllerKilledInWatchWindow kills the controller (SIGKILL) while an upgrade of Release
// web is in its watch window of 40s, and starts another once half of the window is over. The new
// controller finishes the interrupted upgrade for what is left of the window, measured from when
// the journal says it started, not for a new window: the journal it writes keeps the window's
// start, status.currentStep says when the window started, and it and the Reconciling condition
// say that at most half of it is left, and the upgrade's attempt in status.history took less
// than the window. The Release ends Ready and Healthy at revision 2, recorded deployed, with no
// journal left, and an Event UpgradeSucceeded.
func TestControllerKilledInWatchWindow(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	ns := env.Namespace
	chart := berthtest.WriteChart(t, "watched", berthtest.WatchedChart("the new settings are invalid"))
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, chart)
	releasetest.Deployer(t, env, "deployer")
	ctl := newController(t, env)
	ctl.start()

	const window = 40 * time.Second
	web := releaseOf(t, ns, "web", repo.URL, "watched", "deployer", "{}")
	web.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Minute}
	web.Spec.Upgrade = &v1alpha1.UpgradeSpec{WatchSpec: v1alpha1.WatchSpec{WatchFor: &metav1.Duration{Duration: window}}}
	if err := c.Create(t.Context(), web); err != nil {
		t.Fatal(err)
	}
	got := releasetest.WaitFor(t, c, ns, "web", "is installed", readyAt(1))
	got.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"version": 2}`)}
	if err := c.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}

	journals := release.NewJournals(env.Client.CoreV1(), ns)
	first := windowOf(t, journals, "web", ctl.cmd.Process.Pid)
	releasetest.WaitFor(t, c, ns, "web", "says it watches revision 2", func(rel *v1alpha1.Release) bool {
		r := releasetest.Condition(rel, controller.ConditionReconciling)
		return r != nil && r.Message == "revision 2 is Ready; watching its objects for 40s"
	})
	ctl.kill()
	killed := time.Now()
	if rec := berthtest.LastRecord(t, env, "web"); rec.Version != 2 || rec.Info.Status != release.StatusPendingUpgrade {
		t.Fatalf("killed in the window, revision %d is %s, want 2 pending-upgrade", rec.Version, rec.Info.Status)
	}
	// Half of the window passes before the next controller starts, so that what is left of the
	// window and a new one differ by more than a restart takes; meanwhile the journal stays as
	// the killed controller left it.
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, window, true, func(ctx context.Context) (bool, error) {
		j, _, err := journals.Read(ctx, "web")
		if err != nil || j == nil || !j.WatchStarted.Equal(first.Started) {
			return false, fmt.Errorf("the journal changed with no controller running: %+v (%v)", j, err)
		}
		return first.Left(time.Now()) <= window/2, nil
	})
	if err != nil {
		t.Fatal(err)
	}

	ctl.start()
	if resumed := windowOf(t, journals, "web", ctl.cmd.Process.Pid); !resumed.Started.Equal(first.Started) {
		t.Errorf("the new controller's journal says the window started at %s, want %s, when the killed one started it",
			resumed.Started, first.Started)
	}
	said := regexp.MustCompile(`^recover: the watch window of revision 2 started at ` + regexp.QuoteMeta(first.Started.Format(time.RFC3339)) +
		`: (\S+) of its 40s left$`)
	var left time.Duration
	releasetest.WaitFor(t, c, ns, "web", "says the window is resumed", func(rel *v1alpha1.Release) bool {
		m := said.FindStringSubmatch(rel.Status.CurrentStep)
		if m == nil {
			return false
		}
		var err error
		left, err = time.ParseDuration(m[1])
		return err == nil
	})
	if left > window/2 {
		t.Errorf("the resumed window has %s left, want at most half of its %s", left, window)
	}
	// The Reconciling condition says what is left of the window too, not the whole of it.
	watching := regexp.MustCompile(`^revision 2 is Ready; watching its objects for the (\S+) left of its 40s window$`)
	var saysLeft time.Duration
	releasetest.WaitFor(t, c, ns, "web", "says what is left of the window", func(rel *v1alpha1.Release) bool {
		r := releasetest.Condition(rel, controller.ConditionReconciling)
		if r == nil {
			return false
		}
		m := watching.FindStringSubmatch(r.Message)
		if m == nil {
			return false
		}
		var err error
		saysLeft, err = time.ParseDuration(m[1])
		return err == nil
	})
	if saysLeft > window/2 {
		t.Errorf("the Reconciling condition says %s of the window is left, want at most half of its %s", saysLeft, window)
	}

	got = releasetest.WaitFor(t, c, ns, "web", "is upgraded", func(rel *v1alpha1.Release) bool {
		return readyAt(2)(rel) && releasetest.Condition(rel, controller.ConditionReconciling) == nil
	})
	if r := releasetest.Condition(got, controller.ConditionReleased); r == nil || r.Reason != controller.ReasonUpgradeSucceeded {
		t.Errorf("Released: %+v, want reason %s", r, controller.ReasonUpgradeSucceeded)
	}
	if h := releasetest.Condition(got, controller.ConditionHealthy); h == nil || h.Status != metav1.ConditionTrue {
		t.Errorf("Healthy: %+v, want True", h)
	}
	// status.history is newest first: the resumed upgrade, started by the new controller.
	if len(got.Status.History) == 0 {
		t.Errorf("status.history is empty")
	} else if last := got.Status.History[0]; last.Operation != "upgrade" || last.Outcome != "Succeeded" || last.Revision != 2 ||
		!last.StartedAt.After(killed) || last.Duration.Duration >= window {
		t.Errorf("the resumed upgrade's entry in status.history: %+v, want upgrade Succeeded at revision 2, started after the kill (%s), shorter than a window of %s",
			last, killed, window)
	}
	if rec := berthtest.LastRecord(t, env, "web"); rec.Version != 2 || rec.Info.Status != release.StatusDeployed {
		t.Errorf("revision %d is %s, want 2 deployed", rec.Version, rec.Info.Status)
	}
	if j, _, err := journals.Read(t.Context(), "web"); err != nil || j != nil {
		t.Errorf("a journal is left after the upgrade: %+v (%v)", j, err)
	}
	waitForEvent(t, env, controller.ReasonUpgradeSucceeded, "revision 2")
	ctl.running()
}

// windowOf waits until the journal of release name, written by the controller process pid, says
// its watch window started, and returns the window.
func windowOf(t *testing.T, journals *release.Journals, name string, pid int) *lifecycle.Window {
	t.Helper()
	holder := fmt.Sprintf("(pid %d on host ", pid)
	var w *lifecycle.Window
	var last *release.Journal
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, releasetest.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		j, _, err := journals.Read(ctx, name)
		if err != nil || j == nil {
			return false, err
		}
		last = j
		w = lifecycle.WindowOf(j)
		return strings.Contains(j.Holder, holder) && w != nil && !w.Started.IsZero(), nil
	})
	if err != nil {
		t.Fatalf("wait until the journal of %s, written by pid %d, says its window started: %v\nlast journal: %+v", name, pid, err, last)
	}
	return w
}
