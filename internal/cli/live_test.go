package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

func TestLiveViewRedrawsWaitingObjects(t *testing.T) {
	var out bytes.Buffer
	v := newLiveView(&out)
	web := resource.Identity{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}
	v.handle(engine.Event{Type: engine.StepStarted, Step: "wait-ready", Message: "--wait"})
	v.handle(engine.Event{Type: engine.ObjectProgress, Object: web, State: readiness.InProgress, Message: "Available: 0/2"})
	v.handle(engine.Event{Type: engine.ObjectProgress, Object: web, State: readiness.InProgress, Message: "Available: 1/2"})
	if v.drawn != 2 || !strings.HasSuffix(out.String(), "waiting for 1 object(s):\n  Deployment.apps/ns/web: Available: 1/2\n") {
		t.Fatalf("block after two updates (%d lines):\n%q", v.drawn, out.String())
	}
	if !strings.Contains(out.String(), "\x1b[2A\x1b[J") {
		t.Errorf("the block was not erased before it was redrawn:\n%q", out.String())
	}
	v.handle(engine.Event{Type: engine.ObjectProgress, Object: web, State: readiness.Ready, Message: "Deployment is available"})
	if v.drawn != 0 || !strings.HasSuffix(out.String(), "  Deployment.apps/ns/web: Deployment is available\n") {
		t.Errorf("a ready object should leave the block and scroll:\n%q", out.String())
	}
}
