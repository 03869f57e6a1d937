package lifecycle_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// TestInstallReplace: an install takes the name of a release whose last revision is uninstalled
// or failed only with Replace, as Helm's availableName; the new revision follows the last, the
// uninstalled one is superseded by a step of the plan, the failed one is left as it is.
func TestInstallReplace(t *testing.T) {
	ctx := t.Context()
	ch, err := chart.Load(filepath.Join("..", "chart", "testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	seen := &steps{}
	store := release.NewMemoryStore("team")
	d := lifecycle.Deps{Cluster: newFakeCluster(), Store: store, Namespaces: fakeNamespaces{}, Journals: &memoryJournals{},
		Events: seen.event, Holder: release.Holder{Identity: "test"}}
	wait := lifecycle.WaitOptions{Timeout: time.Minute}
	install := lifecycle.InstallOptions{Name: "web", Namespace: "team", Chart: ch, WaitOptions: wait}
	if _, err := lifecycle.Install(ctx, d, install); err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.Uninstall(ctx, d, lifecycle.UninstallOptions{Name: "web", KeepHistory: true, WaitOptions: wait}); err != nil {
		t.Fatal(err)
	}
	seen.take()
	var inUse *lifecycle.NameInUseError
	if _, err := lifecycle.Install(ctx, d, install); !errors.As(err, &inUse) {
		t.Fatalf("install over an uninstalled release without Replace: %v, want a NameInUseError", err)
	}
	install.Replace = true
	res, err := lifecycle.Install(ctx, d, install)
	if err != nil {
		t.Fatal(err)
	}
	if got := seen.take(); len(got) < 2 || got[0] != "record/pending-install/2" || got[1] != "record/superseded/1" {
		t.Errorf("install --replace ran %v, want record/pending-install/2 then record/superseded/1 first", got)
	}
	assertStatuses(t, store, "1 superseded superseded by new release", "2 deployed Install complete")
	if res.Release.Version != 2 {
		t.Errorf("install --replace recorded revision %d, want 2", res.Release.Version)
	}

	// A failed last revision is left as it is.
	failed := *res.Release
	failed.Version, failed.Info = 3, &release.Info{Status: release.StatusFailed, Description: "Upgrade failed"}
	if err := store.Create(ctx, &failed); err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.Install(ctx, d, install); err != nil {
		t.Fatal(err)
	}
	assertStatuses(t, store, "1 superseded superseded by new release", "2 deployed Install complete",
		"3 failed Upgrade failed", "4 deployed Install complete")
}

// assertStatuses checks each revision's number, status and description.
func assertStatuses(t *testing.T, store release.Store, want ...string) {
	t.Helper()
	all, err := store.History(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range all {
		got = append(got, fmt.Sprintf("%d %s %s", r.Version, r.Info.Status, r.Info.Description))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("history:\n got %q\nwant %q", got, want)
	}
}
