package lifecycle_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// waitsSeen is a fake cluster that records the rules of every wait for readiness, and fails the
// next one when asked.
type waitsSeen struct {
	*fakeCluster
	mu       sync.Mutex
	opts     []readiness.Options
	failNext bool
}

func (c *waitsSeen) WaitReady(_ context.Context, _ []resource.Identity, opts readiness.Options, _ cluster.Progress) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opts = append(c.opts, opts)
	if c.failNext {
		c.failNext = false
		return errors.New("not ready")
	}
	return nil
}

func (c *waitsSeen) take() []readiness.Options {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.opts
	c.opts = nil
	return out
}

// TestHealthChecksReachEveryWait: the health checks of Deps (a Release's spec.healthChecks) are
// the rules of every wait of an install, an upgrade, a rollback, and the rollback that undoes a
// failed upgrade, beside --wait-for-jobs.
func TestHealthChecksReachEveryWait(t *testing.T) {
	ctx := t.Context()
	checks, err := readiness.CompileChecks([]readiness.HealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Current: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := chart.Load(filepath.Join("..", "chart", "testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	c := &waitsSeen{fakeCluster: newFakeCluster()}
	d := lifecycle.Deps{
		Cluster: c, Store: release.NewMemoryStore("team"), Namespaces: fakeNamespaces{}, Journals: &memoryJournals{},
		Holder: release.Holder{Identity: "test"}, HealthChecks: checks,
	}
	wait := lifecycle.WaitOptions{Wait: true, WaitForJobs: true, Timeout: time.Minute}
	check := func(what string, wantJobs bool) {
		t.Helper()
		seen := c.take()
		if len(seen) == 0 {
			t.Errorf("%s: no wait for readiness", what)
		}
		for _, o := range seen {
			if o.Checks != checks || o.WaitForJobs != wantJobs {
				t.Errorf("%s waited with checks %p, wait for jobs %t; want %p, %t", what, o.Checks, o.WaitForJobs, checks, wantJobs)
			}
		}
	}

	if _, err := lifecycle.Install(ctx, d, lifecycle.InstallOptions{Name: "web", Namespace: "team", Chart: ch, WaitOptions: wait}); err != nil {
		t.Fatal(err)
	}
	check("install", true)
	if _, err := lifecycle.Upgrade(ctx, d, lifecycle.UpgradeOptions{Name: "web", Namespace: "team", Chart: ch, WaitOptions: wait}); err != nil {
		t.Fatal(err)
	}
	check("upgrade", true)
	if _, err := lifecycle.Rollback(ctx, d, lifecycle.RollbackOptions{Name: "web", Namespace: "team", Version: 1, WaitOptions: wait}); err != nil {
		t.Fatal(err)
	}
	check("rollback", true)

	c.mu.Lock()
	c.failNext = true
	c.mu.Unlock()
	_, err = lifecycle.Upgrade(ctx, d, lifecycle.UpgradeOptions{Name: "web", Namespace: "team", Chart: ch, WaitOptions: wait, RollbackOnFailure: true})
	var fe *lifecycle.FailedError
	if !errors.As(err, &fe) || !fe.Undo || fe.UndoErr != nil {
		t.Fatalf("upgrade = %v, want it failed and rolled back", err)
	}
	seen := c.take()
	if len(seen) < 2 {
		t.Fatalf("the failed upgrade and its rollback waited %d times, want twice", len(seen))
	}
	for _, o := range seen {
		if o.Checks != checks {
			t.Errorf("a wait of the failed upgrade or its rollback had checks %p, want %p", o.Checks, checks)
		}
	}
}
