package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestFetchesAtOnce: of more fetches (of as many namespaces) than maxFetchesAtOnce, only
// maxFetchesAtOnce run at once;
// the others start as those end, and one whose context ends while it waits for its turn never
// runs.
func TestFetchesAtOnce(t *testing.T) {
	f := newFetches(0)
	var running, peak atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 2*maxFetchesAtOnce)
	fetch := func(context.Context) (located, error) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		started <- struct{}{}
		<-release
		running.Add(-1)
		return located{path: "chart.tgz"}, nil
	}
	var flights []*chartFlight
	f.mu.Lock()
	for i := range 2 * maxFetchesAtOnce {
		flights = append(flights, f.start(fmt.Sprint(i), fmt.Sprint("team-", i), fetch))
	}
	f.mu.Unlock()
	for range maxFetchesAtOnce {
		<-started
	}
	// One more waits for its turn: canceled, it never runs.
	f.mu.Lock()
	waiting := f.start("canceled", "team-x", func(context.Context) (located, error) {
		t.Error("a fetch canceled while it waited for its turn ran")
		return located{}, nil
	})
	f.mu.Unlock()
	waiting.cancel()
	<-waiting.done
	if waiting.err == nil {
		t.Error("a fetch canceled while it waited for its turn has no error")
	}
	close(release)
	for _, fl := range flights {
		<-fl.done
		if fl.err != nil || fl.chart.path != "chart.tgz" {
			t.Errorf("fetch: %q, %v", fl.chart.path, fl.err)
		}
	}
	if p := peak.Load(); p != maxFetchesAtOnce {
		t.Errorf("%d fetches ran at once, want %d", p, maxFetchesAtOnce)
	}
}

// TestFetchesOfOneNamespaceKeepTheirShare: twelve fetches of one namespace that never end hold
// DefaultFetchesPerNamespace slots, not all; another namespace's fetch runs beside them at once.
func TestFetchesOfOneNamespaceKeepTheirShare(t *testing.T) {
	f := newFetches(0)
	var running atomic.Int32
	hung := make(chan struct{})
	defer close(hung)
	started := make(chan struct{}, 12)
	f.mu.Lock()
	for i := range 12 {
		f.start(fmt.Sprint("slow-", i), "team-a", func(ctx context.Context) (located, error) {
			running.Add(1)
			started <- struct{}{}
			select {
			case <-hung:
			case <-ctx.Done():
			}
			return located{}, ctx.Err()
		})
	}
	other := f.start("healthy", "team-b", func(context.Context) (located, error) { return located{path: "chart.tgz"}, nil })
	f.mu.Unlock()
	<-other.done
	if other.err != nil || other.chart.path != "chart.tgz" {
		t.Fatalf("another namespace's fetch: %q, %v", other.chart.path, other.err)
	}
	for range DefaultFetchesPerNamespace {
		<-started
	}
	if all, a := f.slots.Running("team-a"); a != DefaultFetchesPerNamespace || all != DefaultFetchesPerNamespace {
		t.Errorf("team-a's fetches hold %d of %d slots, want %d", a, all, DefaultFetchesPerNamespace)
	}
	if n := running.Load(); n != DefaultFetchesPerNamespace {
		t.Errorf("%d of team-a's fetches ran, want %d", n, DefaultFetchesPerNamespace)
	}
}

// TestFreshChartNeedsNoSlot: a chart fetched a moment ago for a key is had again, by any
// Release asking for that key, without a fetch, even when every slot is taken.
func TestFreshChartNeedsNoSlot(t *testing.T) {
	f := newFetches(maxFetchesAtOnce)
	path := filepath.Join(t.TempDir(), "web-0.1.0.tgz")
	if err := os.WriteFile(path, []byte("chart"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	rel := types.NamespacedName{Namespace: "team-a", Name: "web"}
	got, _, err := f.get(ctx, rel, "key", "https://charts.example.com", time.Minute, func(context.Context) (located, error) { return located{path: path}, nil })
	if err != nil || got.path != path {
		t.Fatalf("first fetch: %q, %v", got.path, err)
	}
	var holds []func()
	for range maxFetchesAtOnce {
		release, err := f.slots.Acquire(ctx, "busy")
		if err != nil {
			t.Fatal(err)
		}
		holds = append(holds, release)
	}
	defer func() {
		for _, h := range holds {
			h()
		}
	}()
	other := types.NamespacedName{Namespace: "team-b", Name: "web"}
	got, _, err = f.get(ctx, other, "key", "https://charts.example.com", time.Minute, func(context.Context) (located, error) {
		t.Error("a chart fetched a moment ago was fetched again")
		return located{}, nil
	})
	if err != nil || got.path != path {
		t.Errorf("fresh chart: %q, %v, want %q", got.path, err, path)
	}
}
