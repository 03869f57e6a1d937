package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// TestFetchesAtOnce: of more fetches than maxFetchesAtOnce, only maxFetchesAtOnce run at once;
// the others start as those end, and one whose context ends while it waits for its turn never
// runs.
func TestFetchesAtOnce(t *testing.T) {
	f := newFetches()
	var running, peak atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 2*maxFetchesAtOnce)
	fetch := func(context.Context) (string, error) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		started <- struct{}{}
		<-release
		running.Add(-1)
		return "chart.tgz", nil
	}
	var flights []*chartFlight
	f.mu.Lock()
	for i := range 2 * maxFetchesAtOnce {
		flights = append(flights, f.start(fmt.Sprint(i), fetch))
	}
	f.mu.Unlock()
	for range maxFetchesAtOnce {
		<-started
	}
	// One more waits for its turn: canceled, it never runs.
	f.mu.Lock()
	waiting := f.start("canceled", func(context.Context) (string, error) {
		t.Error("a fetch canceled while it waited for its turn ran")
		return "", nil
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
		if fl.err != nil || fl.path != "chart.tgz" {
			t.Errorf("fetch: %q, %v", fl.path, fl.err)
		}
	}
	if p := peak.Load(); p != maxFetchesAtOnce {
		t.Errorf("%d fetches ran at once, want %d", p, maxFetchesAtOnce)
	}
}
