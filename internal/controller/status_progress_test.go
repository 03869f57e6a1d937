package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/resource"
)

// fakeTimers is a clock whose timers fire when the test says.
type fakeTimers struct {
	now     time.Time
	pending []fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped *bool
}

func (c *fakeTimers) after(d time.Duration, f func()) func() bool {
	stopped := new(bool)
	c.pending = append(c.pending, fakeTimer{at: c.now.Add(d), f: f, stopped: stopped})
	return func() bool { *stopped = true; return true }
}

// advance moves the clock by d and fires the timers due, in order.
func (c *fakeTimers) advance(d time.Duration) {
	c.now = c.now.Add(d)
	for {
		i := slices.IndexFunc(c.pending, func(t fakeTimer) bool { return !t.at.After(c.now) })
		if i < 0 {
			return
		}
		t := c.pending[i]
		c.pending = slices.Delete(c.pending, i, i+1)
		if !*t.stopped {
			t.f()
		}
	}
}

func newFakeReports(c *fakeTimers) (*stepReports, *[]map[string]any) {
	var writes []map[string]any
	return &stepReports{
		after:    c.after,
		now:      func() time.Time { return c.now },
		watching: func(revision int) map[string]any { return map[string]any{"conditions": revision} },
		write:    func(status map[string]any) { writes = append(writes, status) },
	}, &writes
}

func started(step string) engine.Event { return engine.Event{Type: engine.StepStarted, Step: step} }

func TestStepReportsQuickOperationWritesNothing(t *testing.T) {
	c := &fakeTimers{now: time.Unix(1000, 0)}
	s, writes := newFakeReports(c)
	for _, step := range []string{"record/pending-install/1", "apply/ConfigMap", "wait-ready/ConfigMap", "record/deployed/1"} {
		s.handle(started(step))
		c.advance(100 * time.Millisecond)
	}
	s.stop()
	c.advance(time.Minute)
	if len(*writes) != 0 {
		t.Errorf("an operation of 400ms wrote %v, want nothing: its outcome says what it did", *writes)
	}
}

func TestStepReportsStepStillRunning(t *testing.T) {
	c := &fakeTimers{now: time.Unix(1000, 0)}
	s, writes := newFakeReports(c)
	s.handle(started("apply/Deployment"))
	c.advance(1500 * time.Millisecond)
	s.handle(started("wait-ready/Deployment"))
	// The first timer fires 2s after the apply started; the wait has run 500ms: not yet.
	c.advance(500 * time.Millisecond)
	if len(*writes) != 0 {
		t.Fatalf("wrote %v before a step ran for %s", *writes, reportDelay)
	}
	c.advance(1500 * time.Millisecond)
	if want := []map[string]any{{"currentStep": "wait-ready/Deployment"}}; len(*writes) != 1 || (*writes)[0]["currentStep"] != want[0]["currentStep"] {
		t.Fatalf("writes %v, want %v", *writes, want)
	}
	// Still the same step: no write again.
	c.advance(time.Minute)
	if len(*writes) != 1 {
		t.Fatalf("writes %v, want one", *writes)
	}
	// A hook that runs long is written once it has.
	hook := resource.Identity{Group: "batch", Kind: "Job", Namespace: "ns", Name: "x"}
	s.handle(engine.Event{Type: engine.HookStarted, Step: "post-install", Object: hook})
	c.advance(reportDelay)
	if len(*writes) != 2 || (*writes)[1]["currentStep"] != "post-install hook "+hook.String() {
		t.Fatalf("writes %v, want the hook second", *writes)
	}
	// Stopped: a step started since is never written.
	s.handle(started("delete/ConfigMap"))
	s.stop()
	c.advance(time.Minute)
	if len(*writes) != 2 {
		t.Errorf("writes %v after stop", *writes)
	}
}

func TestStepReportsWatchWindowAtOnce(t *testing.T) {
	c := &fakeTimers{now: time.Unix(1000, 0)}
	s, writes := newFakeReports(c)
	s.handle(started("wait-ready/Deployment"))
	s.handle(started("watch/2"))
	if len(*writes) != 1 || (*writes)[0]["currentStep"] != "watch/2" || (*writes)[0]["conditions"] != 2 {
		t.Fatalf("writes %v, want the window's start at once, with its conditions", *writes)
	}
	c.advance(time.Minute)
	if len(*writes) != 1 {
		t.Errorf("writes %v, want the window's start alone", *writes)
	}
}
