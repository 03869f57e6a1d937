package lifecycle_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// watchFixture is the app chart of internal/chart/testdata installed on a fake cluster whose
// watch windows do what window says, with a clock the test moves.
type watchFixture struct {
	d        lifecycle.Deps
	c        *fakeCluster
	store    *release.HelmStore
	journals *memoryJournals
	ch       *chartv2.Chart
	mu       sync.Mutex
	clock    time.Time
}

func newWatchFixture(t *testing.T) *watchFixture {
	t.Helper()
	ch, err := chart.Load(filepath.Join("..", "chart", "testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	f := &watchFixture{c: newFakeCluster(), store: release.NewMemoryStore("team"), journals: &memoryJournals{},
		clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), ch: ch}
	f.d = lifecycle.Deps{Cluster: f.c, Store: f.store, Namespaces: fakeNamespaces{}, Journals: f.journals,
		Now: f.now, Holder: release.Holder{Identity: "test"}}
	if _, err := lifecycle.Install(t.Context(), f.d, lifecycle.InstallOptions{Name: "web", Namespace: "team", Chart: ch,
		WaitOptions: lifecycle.WaitOptions{Wait: true, Timeout: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *watchFixture) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clock
}

func (f *watchFixture) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = f.clock.Add(d)
}

func (f *watchFixture) upgrade(w lifecycle.WatchOptions, rollbackOnFailure bool) lifecycle.UpgradeOptions {
	return lifecycle.UpgradeOptions{Name: "web", Namespace: "team", Chart: f.ch, RollbackOnFailure: rollbackOnFailure,
		WaitOptions: lifecycle.WaitOptions{Timeout: 5 * time.Minute, Watch: w},
		Values:      map[string]any{"greeting": "hi"}}
}

// TestWatchStepInPlan: with --watch-for, the plan has one watch step, of the revision's own
// objects (not the CRDs of crds/, not the hooks), after the post hooks and before the revision
// is recorded deployed; without, the plan is as it was, and --watch-for implies --wait.
func TestWatchStepInPlan(t *testing.T) {
	f := newWatchFixture(t)
	ctx := t.Context()
	without, err := lifecycle.PreviewUpgrade(ctx, f.d, lifecycle.UpgradeOptions{Name: "web", Namespace: "team", Chart: f.ch,
		WaitOptions: lifecycle.WaitOptions{Wait: true, Timeout: 5 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	w := lifecycle.WatchOptions{For: time.Minute, Tolerance: 30 * time.Second, Restarts: 2}
	with, err := lifecycle.PreviewUpgrade(ctx, f.d, f.upgrade(w, false))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range without.Plan.Steps {
		if s.Action == plan.Watch {
			t.Errorf("an upgrade without a window has a watch step: %s", s.ID)
		}
	}
	ids := stepIDs(with.Plan)
	i := slices.Index(ids, "watch/2")
	if i < 0 {
		t.Fatalf("no watch/2 step in %q", ids)
	}
	if want := slices.Insert(stepIDs(without.Plan), len(without.Plan.Steps)-1, "watch/2"); !slices.Equal(ids, want) {
		t.Errorf("steps with a window: %q, want those without, with watch/2 before the last: %q", ids, want)
	}
	if ids[i+1] != "record/deployed/2" {
		t.Errorf("the watch step is followed by %s, want record/deployed/2", ids[i+1])
	}
	step := with.Plan.Steps[i]
	if diff := cmp.Diff(&plan.Window{For: time.Minute, Tolerance: 30 * time.Second, Restarts: 2}, step.Window); diff != "" {
		t.Errorf("the watch step's window (-want +got):\n%s", diff)
	}
	var objects []resource.Identity
	for _, s := range with.Plan.Steps {
		if s.Action == plan.WaitReady && s.ID == "wait-ready" {
			objects = s.Objects
		}
	}
	if diff := cmp.Diff(objects, step.Objects); diff != "" {
		t.Errorf("the watch step watches other objects than the revision's (-its wait's +watched):\n%s", diff)
	}
	for _, id := range step.Objects {
		if id.IsCRD() || strings.Contains(id.Name, "hook") || strings.Contains(id.Name, "migrate") {
			t.Errorf("the watch step watches %s, a CRD or a hook", id)
		}
	}
	if !strings.HasPrefix(step.Reason, "watch 4 objects for 1m0s ") {
		t.Errorf("the watch step says %q, want it to start with how many objects it watches and how long", step.Reason)
	}
	// --watch-for implies --wait: the objects are waited for before the window.
	noWait, err := lifecycle.PreviewUpgrade(ctx, f.d, f.upgrade(w, false))
	if err != nil || !slices.Contains(stepIDs(noWait.Plan), "wait-ready") {
		t.Errorf("an upgrade with --watch-for and no --wait does not wait: %q, %v", stepIDs(noWait.Plan), err)
	}
}

// TestWatchStartedIsJournalled: the journal says when the window started, written with the step
// before it (the one write of an object step), and the window is asked of the cluster for all of its length.
func TestWatchStartedIsJournalled(t *testing.T) {
	f := newWatchFixture(t)
	ctx := t.Context()
	var seen *release.Journal
	var asked cluster.WindowOptions
	f.c.window = func(ctx context.Context, _ []resource.Identity, opts cluster.WindowOptions) error {
		seen, _ = f.journals.Get(ctx, "web")
		asked = opts
		return nil
	}
	writesBefore := f.journals.writes
	if _, err := lifecycle.Upgrade(ctx, f.d, f.upgrade(lifecycle.WatchOptions{For: time.Minute, Tolerance: time.Second}, false)); err != nil {
		t.Fatal(err)
	}
	if seen == nil {
		t.Fatal("no journal while the window ran")
	}
	if !seen.WatchStarted.Equal(f.now()) {
		t.Errorf("the journal says the window started at %s, want %s", seen.WatchStarted, f.now())
	}
	if last := seen.Steps[len(seen.Steps)-1]; last != "wait-ready" {
		t.Errorf("the journal written before the window ends with %s, want the step before the window (wait-ready)", last)
	}
	if asked.For != time.Minute || asked.Tolerance != time.Second {
		t.Errorf("the window was asked for %+v, want For 1m, Tolerance 1s", asked)
	}
	withWindow := f.journals.writes - writesBefore

	writesBefore = f.journals.writes
	plain := f.upgrade(lifecycle.WatchOptions{}, false)
	plain.Wait = true
	if _, err := lifecycle.Upgrade(ctx, f.d, plain); err != nil {
		t.Fatal(err)
	}
	// The window's start is written with the step before it, which is otherwise not written (an
	// object step), and its end not at all.
	if without := f.journals.writes - writesBefore; withWindow != without+1 {
		t.Errorf("an upgrade with a window wrote its journal %d times, one without %d: want one more", withWindow, without)
	}
	last, err := f.store.Last(ctx, "web")
	if err != nil || last.Version != 3 || last.Info.Status != release.StatusDeployed {
		t.Errorf("the last revision is %+v, %v; want 3 deployed", last, err)
	}
}

// TestWatchResumesWhatIsLeft: an upgrade stopped in its window is finished by watching for what
// is left of it since it started; when nothing is, the window is judged once (For 0).
func TestWatchResumesWhatIsLeft(t *testing.T) {
	for _, tt := range []struct {
		after, want time.Duration
	}{
		{after: 20 * time.Second, want: 40 * time.Second},
		{after: 90 * time.Second, want: 0},
	} {
		f := newWatchFixture(t)
		ctx, signal := context.WithCancel(t.Context())
		var asked []time.Duration
		f.c.window = func(ctx context.Context, _ []resource.Identity, opts cluster.WindowOptions) error {
			asked = append(asked, opts.For)
			if len(asked) == 1 {
				signal() // stopped in the window
				<-ctx.Done()
				return context.Cause(ctx)
			}
			return nil
		}
		_, err := lifecycle.Upgrade(ctx, f.d, f.upgrade(lifecycle.WatchOptions{For: time.Minute}, false))
		if !errors.Is(err, lifecycle.ErrInterrupted) {
			t.Fatalf("stopped in the window: %v, want it interrupted", err)
		}
		last, _ := f.store.Last(t.Context(), "web")
		if last.Info.Status != release.StatusPendingUpgrade {
			t.Errorf("stopped in the window, revision %d is %s, want pending-upgrade", last.Version, last.Info.Status)
		}
		j, _ := f.journals.Get(t.Context(), "web")
		if w := lifecycle.WindowOf(j); w == nil || w.Started.IsZero() || w.Done || w.Revision != 2 {
			t.Errorf("the journal's window: %+v, want revision 2's, started, not done", w)
		}
		f.advance(tt.after)
		res, err := lifecycle.Recover(t.Context(), f.d, lifecycle.RecoverOptions{Name: "web", WaitOptions: lifecycle.WaitOptions{Timeout: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]time.Duration{time.Minute, tt.want}, asked); diff != "" {
			t.Errorf("%s after the window started: the windows asked (-want +got):\n%s", tt.after, diff)
		}
		if res.Release == nil || res.Release.Version != 2 || res.Release.Info.Status != release.StatusDeployed {
			t.Errorf("after recovery: %+v, want revision 2 deployed", res.Release)
		}
	}
}

// TestWatchRegression: a regression in the window fails the upgrade, recorded with the reason;
// it is rolled back per --rollback-on-failure and the remediation, and the rollback says why.
// A failure of the window that is no regression is undone only with --rollback-on-failure.
func TestWatchRegression(t *testing.T) {
	regressed := &cluster.RegressionError{Object: resource.Identity{Group: "apps", Kind: "Deployment", Namespace: "team", Name: "web-app"},
		What: "was ready, now failed: Available: 0/1", Since: time.Date(2026, 1, 2, 3, 4, 25, 0, time.UTC)}
	tests := []struct {
		name        string
		rollback    bool
		remediation lifecycle.Remediation
		cause       error
		undone      bool
	}{
		{name: "rollback on failure", rollback: true, cause: regressed, undone: true},
		{name: "no rollback", cause: regressed},
		{name: "remediation none", rollback: true, remediation: lifecycle.RemediateNone, cause: regressed},
		{name: "remediation rollback", remediation: lifecycle.RemediateRollback, cause: regressed, undone: true},
		{name: "other failure, remediation rollback", remediation: lifecycle.RemediateRollback, cause: errors.New("watch: the API server went away")},
		{name: "other failure, rollback on failure", rollback: true, cause: errors.New("watch: the API server went away"), undone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newWatchFixture(t)
			ctx := t.Context()
			f.c.window = func(context.Context, []resource.Identity, cluster.WindowOptions) error { return tt.cause }
			_, err := lifecycle.Upgrade(ctx, f.d, f.upgrade(lifecycle.WatchOptions{For: time.Minute, Remediation: tt.remediation}, tt.rollback))
			var fe *lifecycle.FailedError
			if !errors.As(err, &fe) || fe.Undo != tt.undone || fe.UndoErr != nil {
				t.Fatalf("upgrade: %v, want a failure undone: %v", err, tt.undone)
			}
			failed, err := f.store.Get(ctx, "web", 2)
			if err != nil {
				t.Fatal(err)
			}
			want := `Upgrade "web" failed: revision 2 degraded in its watch window: Deployment.apps/team/web-app: was ready, now failed: Available: 0/1 (since 2026-01-02T03:04:25Z)`
			if tt.cause != regressed {
				want = `Upgrade "web" failed: step watch/2: ` + tt.cause.Error()
			}
			if failed.Info.Status != release.StatusFailed || failed.Info.Description != want {
				t.Errorf("revision 2: %s %q, want failed %q", failed.Info.Status, failed.Info.Description, want)
			}
			last, err := f.store.Last(ctx, "web")
			if err != nil {
				t.Fatal(err)
			}
			if !tt.undone {
				if last.Version != 2 {
					t.Errorf("the last revision is %d, want 2 left as it is", last.Version)
				}
				return
			}
			want = "Rollback to 1: revision 2 degraded in its watch window: Deployment.apps/team/web-app: was ready, now failed: Available: 0/1 (since 2026-01-02T03:04:25Z)"
			if tt.cause != regressed {
				want = "Rollback to 1"
			}
			if last.Version != 3 || last.Info.Status != release.StatusDeployed || last.Info.Description != want {
				t.Errorf("revision %d: %s %q, want 3 deployed %q", last.Version, last.Info.Status, last.Info.Description, want)
			}
		})
	}
}

// TestWatchWindowMustFit: a window not shorter than the operation's own time (all of --timeout,
// two thirds of it when a failure may be undone), or with a negative option, is refused before
// anything changes.
func TestWatchWindowMustFit(t *testing.T) {
	f := newWatchFixture(t)
	ctx := t.Context()
	tests := []struct {
		w        lifecycle.WatchOptions
		rollback bool
		timeout  time.Duration
		long     bool
		option   string
	}{
		{w: lifecycle.WatchOptions{For: time.Minute}, timeout: time.Minute, long: true},
		{w: lifecycle.WatchOptions{For: 40 * time.Second}, rollback: true, timeout: time.Minute, long: true},
		{w: lifecycle.WatchOptions{For: 40 * time.Second, Remediation: lifecycle.RemediateRollback}, timeout: time.Minute, long: true},
		{w: lifecycle.WatchOptions{For: 6 * time.Minute}, long: true}, // the default timeout, five minutes
		{w: lifecycle.WatchOptions{For: -time.Second}, option: "for"},
		{w: lifecycle.WatchOptions{For: time.Second, Tolerance: -time.Second}, option: "tolerance"},
		{w: lifecycle.WatchOptions{For: time.Second, Restarts: -1}, option: "restarts"},
		{w: lifecycle.WatchOptions{For: time.Second, Remediation: "retry"}, option: "remediation"},
		{w: lifecycle.WatchOptions{For: 39 * time.Second}, rollback: true, timeout: time.Minute},
		{w: lifecycle.WatchOptions{For: 59 * time.Second}, timeout: time.Minute},
	}
	for _, tt := range tests {
		o := f.upgrade(tt.w, tt.rollback)
		o.Timeout = tt.timeout
		_, err := lifecycle.Upgrade(ctx, f.d, o)
		var long *lifecycle.WindowTooLongError
		var opt *lifecycle.WindowOptionError
		switch {
		case tt.long && !errors.As(err, &long):
			t.Errorf("window %+v, rollback %v, timeout %s: %v, want a *WindowTooLongError", tt.w, tt.rollback, tt.timeout, err)
		case tt.option != "" && (!errors.As(err, &opt) || opt.Option != tt.option):
			t.Errorf("window %+v: %v, want a *WindowOptionError of %s", tt.w, err, tt.option)
		case !tt.long && tt.option == "" && err != nil:
			t.Errorf("window %+v, rollback %v, timeout %s: %v", tt.w, tt.rollback, tt.timeout, err)
		}
		if tt.long || tt.option != "" {
			if last, _ := f.store.Last(ctx, "web"); last.Info.Status != release.StatusDeployed {
				t.Errorf("window %+v refused, yet the last revision %d is %s", tt.w, last.Version, last.Info.Status)
			}
		}
	}
}

// TestWatchRegressionUndoesAnInstall: an install that regresses in its window, with rollback on
// failure, is undone as rollback on failure undoes an install: uninstalled, records and all.
func TestWatchRegressionUndoesAnInstall(t *testing.T) {
	ch, err := chart.Load(filepath.Join("..", "chart", "testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	c := newFakeCluster()
	store := release.NewMemoryStore("team")
	d := lifecycle.Deps{Cluster: c, Store: store, Namespaces: fakeNamespaces{}, Journals: &memoryJournals{},
		Holder: release.Holder{Identity: "test"}}
	regressed := &cluster.RegressionError{Object: resource.Identity{Group: "apps", Kind: "Deployment", Namespace: "team", Name: "web-app"},
		What: "was ready, now failed"}
	var watched []resource.Identity
	c.window = func(_ context.Context, targets []resource.Identity, _ cluster.WindowOptions) error {
		watched = targets
		return regressed
	}
	_, err = lifecycle.Install(t.Context(), d, lifecycle.InstallOptions{Name: "web", Namespace: "team", Chart: ch, RollbackOnFailure: true,
		WaitOptions: lifecycle.WaitOptions{Timeout: time.Minute, Watch: lifecycle.WatchOptions{For: 10 * time.Second}}})
	var fe *lifecycle.FailedError
	if !errors.As(err, &fe) || !fe.Undo || fe.UndoErr != nil {
		t.Fatalf("install: %v, want a failure undone", err)
	}
	if len(watched) == 0 || slices.ContainsFunc(watched, resource.Identity.IsCRD) {
		t.Errorf("the install's window watched %v: want the release's objects, without its CRDs", watched)
	}
	if _, err := store.Last(t.Context(), "web"); !errors.Is(err, release.ErrNotFound) {
		t.Errorf("after the undone install, the release is still recorded: %v", err)
	}
}
