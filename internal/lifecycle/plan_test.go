package lifecycle_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// steps records the steps an operation starts, in order.
type steps struct {
	mu  sync.Mutex
	ids []string
}

func (s *steps) event(e engine.Event) {
	if e.Type == engine.StepStarted && e.Step != "recover" {
		s.mu.Lock()
		s.ids = append(s.ids, e.Step)
		s.mu.Unlock()
	}
}

func (s *steps) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.ids
	s.ids = nil
	return out
}

func stepIDs(p *plan.Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.ID)
	}
	return out
}

// TestOperationPlans takes the app chart of internal/chart/testdata through its lifecycle on a
// fake cluster: for each operation it prints the plan its preview shows (golden), then runs the
// operation and checks that the steps it executed are exactly those of the plan.
func TestOperationPlans(t *testing.T) {
	ctx := t.Context()
	ch, err := chart.Load(filepath.Join("..", "chart", "testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	seen := &steps{}
	store := release.NewMemoryStore("team")
	journals := &memoryJournals{}
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := lifecycle.Deps{
		Cluster: newFakeCluster(), Store: store, Namespaces: fakeNamespaces{}, Journals: journals,
		Events: seen.event, Now: func() time.Time { return clock },
		Holder: release.Holder{Identity: "test"},
	}
	wait := lifecycle.WaitOptions{Wait: true, Timeout: time.Minute}
	var golden strings.Builder
	show := func(title string, pv *lifecycle.Preview, err error) *plan.Plan {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", title, err)
		}
		fmt.Fprintf(&golden, "## %s\n%s\n", title, pv.Plan)
		return pv.Plan
	}
	ran := func(title string, p *plan.Plan, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", title, err)
		}
		if diff := cmp.Diff(stepIDs(p), seen.take()); diff != "" {
			t.Errorf("%s executed other steps than its plan's (-plan +executed):\n%s", title, diff)
		}
		if j, _ := journals.Get(ctx, "web"); j != nil {
			t.Errorf("%s left its journal: %+v", title, j)
		}
	}

	install := lifecycle.InstallOptions{Name: "web", Namespace: "team", Chart: ch, WaitOptions: wait}
	pv, err := lifecycle.PreviewInstall(ctx, d, install)
	p := show("install", pv, err)
	_, err = lifecycle.Install(ctx, d, install)
	ran("install", p, err)

	upgrade := func(sub bool) lifecycle.UpgradeOptions {
		return lifecycle.UpgradeOptions{Name: "web", Namespace: "team", Chart: ch, WaitOptions: wait, HistoryMax: 3,
			Values: map[string]any{"sub": map[string]any{"enabled": sub}, "greeting": fmt.Sprint("hi ", sub)}}
	}
	pv, err = lifecycle.PreviewUpgrade(ctx, d, upgrade(true))
	p = show("upgrade: the subchart is added", pv, err)
	_, err = lifecycle.Upgrade(ctx, d, upgrade(true))
	ran("upgrade", p, err)

	pv, err = lifecycle.PreviewUpgrade(ctx, d, upgrade(false))
	p = show("upgrade: the subchart leaves", pv, err)
	_, err = lifecycle.Upgrade(ctx, d, upgrade(false))
	ran("upgrade", p, err)

	rollback := lifecycle.RollbackOptions{Name: "web", Namespace: "team", Version: 2, WaitOptions: wait}
	pv, err = lifecycle.PreviewRollback(ctx, d, rollback)
	p = show("rollback to 2", pv, err)
	_, err = lifecycle.Rollback(ctx, d, rollback)
	ran("rollback", p, err)

	// A release an older tool left pending-upgrade, without a journal: recovery finishes it from
	// its record.
	last, err := store.Last(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	pending := *last
	pending.Info = &release.Info{Status: release.StatusPendingUpgrade, Description: "Preparing upgrade", FirstDeployed: clock, LastDeployed: clock}
	pending.Version = last.Version + 1
	if err := store.Create(ctx, &pending); err != nil {
		t.Fatal(err)
	}
	res, err := lifecycle.Recover(ctx, d, lifecycle.RecoverOptions{Name: "web", WaitOptions: wait})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&golden, "## recover: %s\n%s\n\n", res.Action, strings.Join(seen.take(), "\n"))
	if res.Release == nil || res.Release.Info.Status != release.StatusDeployed || res.Release.Version != pending.Version {
		t.Errorf("after recovery the last revision is %+v, want revision %d deployed", res.Release, pending.Version)
	}

	uninstall := lifecycle.UninstallOptions{Name: "web", WaitOptions: wait}
	pv, err = lifecycle.PreviewUninstall(ctx, d, uninstall)
	p = show("uninstall", pv, err)
	_, err = lifecycle.Uninstall(ctx, d, uninstall)
	ran("uninstall", p, err)
	if _, err := store.Last(ctx, "web"); err == nil {
		t.Error("the release is still recorded after its uninstall")
	}

	compareGolden(t, filepath.Join("testdata", "plans.golden"), golden.String())
}

// TestInterruptedPlanResumesFromItsJournal stops an upgrade after each journal write in turn (a
// signal, which stops the operation at its next step) and checks that recovery executes exactly
// the journaled plan's unfinished steps, and the release ends deployed.
func TestInterruptedPlanResumesFromItsJournal(t *testing.T) {
	ch, err := chart.Load(filepath.Join("..", "chart", "testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	for stop := 1; ; stop++ {
		seen := &steps{}
		store := release.NewMemoryStore("team")
		journals := &memoryJournals{}
		d := lifecycle.Deps{Cluster: newFakeCluster(), Store: store, Namespaces: fakeNamespaces{}, Journals: journals,
			Events: seen.event, Holder: release.Holder{Identity: "test"}}
		wait := lifecycle.WaitOptions{Wait: true, Timeout: time.Minute}
		if _, err := lifecycle.Install(t.Context(), d, lifecycle.InstallOptions{Name: "web", Namespace: "team", Chart: ch, WaitOptions: wait}); err != nil {
			t.Fatal(err)
		}
		seen.take()
		ctx, signal := context.WithCancel(t.Context())
		d.JournalWritten = func(n int) {
			if n == stop {
				signal()
			}
		}
		_, err := lifecycle.Upgrade(ctx, d, lifecycle.UpgradeOptions{Name: "web", Namespace: "team", Chart: ch, WaitOptions: wait,
			Values: map[string]any{"sub": map[string]any{"enabled": true}}})
		signal()
		d.JournalWritten = nil
		if !errors.Is(err, lifecycle.ErrInterrupted) {
			if err != nil {
				t.Fatalf("signal after journal write %d: %v", stop, err)
			}
			if stop == 1 {
				t.Fatal("the upgrade wrote no journal")
			}
			return // every write point was tried
		}
		executed := seen.take()
		j, _ := journals.Get(t.Context(), "web")
		if j == nil || j.Plan == nil {
			t.Fatalf("signal after journal write %d: no journal with its plan left: %+v", stop, j)
		}
		// Stopped before it recorded its revision, the upgrade changed nothing: recovery only
		// deletes its journal, and the release stays at revision 1.
		var want []string
		wantRevision := 1
		if slices.Contains(j.Steps, "record/pending-upgrade/2") {
			wantRevision = 2
			for _, id := range stepIDs(j.Plan) {
				if !slices.Contains(j.Steps, id) {
					want = append(want, id)
				}
			}
		}
		// Then it sweeps the parts no record names, as a plan step of its own.
		want = append(want, fmt.Sprintf("record/parts-swept/%d", j.Revision))
		res, err := lifecycle.Recover(t.Context(), d, lifecycle.RecoverOptions{Name: "web", WaitOptions: wait})
		if err != nil {
			t.Fatalf("signal after journal write %d: recover: %v", stop, err)
		}
		if diff := cmp.Diff(want, seen.take()); diff != "" {
			t.Errorf("signal after journal write %d (steps run %q): recovery ran other steps than the journal's unfinished ones (-want +got):\n%s", stop, executed, diff)
		}
		if res.Release == nil || res.Release.Info.Status != release.StatusDeployed || res.Release.Version != wantRevision {
			t.Errorf("signal after journal write %d: after recovery the release is %+v, want revision %d deployed", stop, res.Release, wantRevision)
		}
		if j, _ := journals.Get(t.Context(), "web"); j != nil {
			t.Errorf("signal after journal write %d: recovery left the journal", stop)
		}
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/lifecycle -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got); rerun with -update if the change is intended:\n%s", path, diff)
	}
}

// TestHookLogLinesAreEvents: with FollowHookLogs, what a hook's containers write is told as
// HookLogLine events between the hook's start and its outcome; without, it is not followed.
func TestHookLogLinesAreEvents(t *testing.T) {
	ch, err := chart.Load(filepath.Join("..", "chart", "testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	for _, follow := range []bool{true, false} {
		var mu sync.Mutex
		var got []string
		d := lifecycle.Deps{
			Cluster: newFakeCluster(), Store: release.NewMemoryStore("team"), Namespaces: fakeNamespaces{},
			Holder: release.Holder{Identity: "test"}, FollowHookLogs: follow,
			Events: func(e engine.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch e.Type {
				case engine.HookStarted, engine.HookDone:
					got = append(got, fmt.Sprintf("%s %s", e.Type, e.Object.Name))
				case engine.HookLogLine:
					got = append(got, fmt.Sprintf("%s %s %s: %s", e.Type, e.Object.Name, e.Source, e.Message))
				}
			},
		}
		install := lifecycle.InstallOptions{Name: "web", Namespace: "team", Chart: ch, WaitOptions: lifecycle.WaitOptions{Wait: true, Timeout: time.Minute}}
		if _, err := lifecycle.Install(t.Context(), d, install); err != nil {
			t.Fatal(err)
		}
		want := []string{"hook-started web-app-hook-config", "hook-done web-app-hook-config", "hook-started web-app-migrate", "hook-done web-app-migrate"}
		if follow {
			want = []string{
				"hook-started web-app-hook-config", "hook-log-line web-app-hook-config web-app-hook-config-pod/main: ran web-app-hook-config", "hook-done web-app-hook-config",
				"hook-started web-app-migrate", "hook-log-line web-app-migrate web-app-migrate-pod/main: ran web-app-migrate", "hook-done web-app-migrate",
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("FollowHookLogs %v: hook events (-want +got):\n%s", follow, diff)
		}
	}
}
