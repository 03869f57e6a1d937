package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

func TestLiveViewRedrawsWhatIsUnderWay(t *testing.T) {
	var out bytes.Buffer
	v := newLiveView(&out)
	v.tick = 0 // redraw on events only
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v.now = func() time.Time { return clock }
	web := resource.Identity{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}
	v.handle(engine.Event{Type: engine.StepStarted, Step: "wait-ready", Message: "waiting"})
	v.handle(engine.Event{Type: engine.ObjectProgress, Step: "wait-ready", Object: web, State: readiness.InProgress, Message: "Available: 0/2"})
	clock = clock.Add(1500 * time.Millisecond)
	v.handle(engine.Event{Type: engine.ObjectProgress, Step: "wait-ready", Object: web, State: readiness.InProgress, Message: "Available: 1/2"})
	want := "STEP        OBJECT                  STATE           ELAPSED\nwait-ready  Deployment.apps/ns/web  Available: 1/2  1.5s\n"
	if v.drawn != 2 || !strings.HasSuffix(out.String(), want) {
		t.Fatalf("table after two updates (%d lines):\n%q\nwant it to end with\n%q", v.drawn, out.String(), want)
	}
	if !strings.Contains(out.String(), "\x1b[2A\x1b[J") {
		t.Errorf("the table was not erased before it was redrawn:\n%q", out.String())
	}
	v.handle(engine.Event{Type: engine.ObjectProgress, Step: "wait-ready", Object: web, State: readiness.Ready, Message: "Deployment is available"})
	if v.drawn != 0 || !strings.HasSuffix(out.String(), "  Deployment.apps/ns/web: Deployment is available\n") {
		t.Errorf("a ready object should leave the table and scroll:\n%q", out.String())
	}

	job := resource.Identity{Group: "batch", Kind: "Job", Namespace: "ns", Name: "migrate"}
	v.handle(engine.Event{Type: engine.HookStarted, Step: "pre-upgrade", Object: job})
	if !strings.HasSuffix(out.String(), "pre-upgrade hook  Job.batch/ns/migrate  running  0s\n") {
		t.Errorf("a running hook should be a row of the table:\n%q", out.String())
	}
	// What the hook writes scrolls above the table, which stays below it while the hook runs.
	v.handle(engine.Event{Type: engine.HookLogLine, Step: "pre-upgrade", Object: job, Source: "migrate-x7k2p/main", Message: "migrated 3 tables"})
	if want := "  migrate migrate-x7k2p/main | migrated 3 tables\nSTEP              OBJECT                STATE    ELAPSED\npre-upgrade hook  Job.batch/ns/migrate  running  0s\n"; !strings.HasSuffix(out.String(), want) {
		t.Errorf("a hook's log line should scroll above the table:\n%q\nwant it to end with\n%q", out.String(), want)
	}
	v.handle(engine.Event{Type: engine.HookDone, Step: "pre-upgrade", Object: job, Message: "Job completed", Duration: time.Second})
	if v.drawn != 0 || !strings.HasSuffix(out.String(), "pre-upgrade hook Job.batch/ns/migrate: Job completed in 1s\n") {
		t.Errorf("a finished hook should leave the table and scroll:\n%q", out.String())
	}
}
