package controller

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/resource"
)

// crashLoop is the regression of a Pod of Deployment web whose container crash-loops, with its
// log, which holds a value.
func crashLoop() *cluster.RegressionError {
	pod := resource.Identity{Kind: "Pod", Namespace: "apps", Name: "web-7d4b9-x2x"}
	return &cluster.RegressionError{
		Object: resource.Identity{Group: "apps", Kind: "Deployment", Namespace: "apps", Name: "web"},
		Pod:    &pod,
		What:   "container app is waiting in CrashLoopBackOff, last exit code 1 (Error)",
		Since:  time.Date(2026, 11, 27, 10, 0, 20, 0, time.UTC),
		Report: &cluster.PodReport{Name: "web-7d4b9-x2x", Phase: "Running", Reason: "", Message: "",
			Containers: []string{"app: waiting: CrashLoopBackOff: back-off 2s restarting failed container", "sidecar: terminated, exit code 1 (Error): password=hunter2 is wrong"}},
		Logs: map[string]string{"web-7d4b9-x2x/app (previous)": "panic: password=hunter2 is invalid"},
	}
}

// TestDegradedMessages: a regression in the window names the revision, the object, the Pod and
// what changed, then what was done about it; nothing of the Pod's logs or containers' messages.
func TestDegradedMessages(t *testing.T) {
	re := crashLoop()
	step := fmt.Errorf("watch/2: %w", re)
	for _, tt := range []struct {
		name string
		err  *DegradedError
		want string
	}{
		{"rolled back", &DegradedError{Op: "upgrade", Undo: true, BackTo: 1, Deployed: 3}, "; rolled back: the release is back on revision 1 (recorded as revision 3)"},
		{"rolled back, record unread", &DegradedError{Op: "upgrade", Undo: true}, "; rolled back to the deployed revision"},
		{"rollback failed", &DegradedError{Op: "upgrade", Undo: true, UndoErr: errors.New("timed out")}, "; rolling back failed too: timed out"},
		{"install undone", &DegradedError{Op: "install", Undo: true}, "; uninstalled: the install was undone"},
		{"left", &DegradedError{Op: "upgrade"}, "; recorded failed, and left as it is (no rollback)"},
		{"lost", &DegradedError{Op: "upgrade", Lost: true, Undo: true}, "; neither recorded nor undone: another took the release"},
	} {
		e := tt.err
		e.Release, e.Revision, e.Regression, e.Err = "web", 2, re, step
		msg := errorLine(e)
		start := "revision 2 of release web degraded in its watch window: Deployment.apps/apps/web: Pod web-7d4b9-x2x: container app is waiting in CrashLoopBackOff, last exit code 1 (Error) (since 2026-11-27T10:00:20Z)"
		if !strings.HasPrefix(msg, start) || !strings.HasSuffix(msg, tt.want) {
			t.Errorf("%s:\n%s\nwant:\n%s...%s", tt.name, msg, start, tt.want)
		}
		if strings.Contains(msg, "hunter2") {
			t.Errorf("%s: the message holds a value: %s", tt.name, msg)
		}
		if reasonOf(e, ReasonUpgradeFailed) != ReasonDegraded {
			t.Errorf("%s: reason %s", tt.name, reasonOf(e, ReasonUpgradeFailed))
		}
	}
}

// TestDegradedOf: an operation failed by a regression becomes a *DegradedError with what the
// lifecycle did about it; any other error is left as it is.
func TestDegradedOf(t *testing.T) {
	plain := errors.New("wait-ready/2: timed out")
	if got := (&Reconciler{}).degraded(t.Context(), &v1alpha1.Release{}, nil, "web", "upgrade", 2, plain); got != plain {
		t.Errorf("an error of no regression became %v", got)
	}
	fe := &lifecycle.FailedError{Release: "web", Revision: 2, What: `Upgrade "web" failed`, Err: fmt.Errorf("watch/2: %w", crashLoop()),
		Undo: true, UndoErr: errors.New("Deployment web: timed out")}
	var de *DegradedError
	if got := (&Reconciler{}).degraded(t.Context(), &v1alpha1.Release{}, nil, "web", "upgrade", 0, fe); !errors.As(got, &de) || !de.Undo || de.UndoErr == nil || de.Revision != 2 || !errors.Is(got, fe) {
		t.Fatalf("%#v", got)
	}
	if !strings.Contains(errorLine(de), "rolling back failed too: Deployment web: timed out") {
		t.Errorf("message: %s", errorLine(de))
	}
}

// TestDegradedStatus: the Release is not Ready with reason Degraded, its blocker names the object
// and the Pod's state without its containers' messages, and the logs are in logTail only when the
// controller may show them.
func TestDegradedStatus(t *testing.T) {
	de := &DegradedError{Op: "upgrade", Release: "web", Revision: 2, Regression: crashLoop(), Undo: true, BackTo: 1, Deployed: 3, Err: crashLoop()}
	for _, chartOutput := range []bool{false, true} {
		rel := &v1alpha1.Release{}
		markFailed(rel, reasonOf(de, ReasonUpgradeFailed), de, true)
		status.Redact(rel, chartOutput, nil)
		c := meta.FindStatusCondition(rel.Status.Conditions, ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonDegraded || !strings.Contains(c.Message, "Pod web-7d4b9-x2x") || !strings.Contains(c.Message, "back on revision 1") {
			t.Errorf("Ready: %+v", c)
		}
		if len(rel.Status.Blockers) != 1 {
			t.Fatalf("blockers: %+v", rel.Status.Blockers)
		}
		b := rel.Status.Blockers[0]
		if b.Kind != "degraded" || b.Object != "Deployment.apps/apps/web" || !strings.Contains(b.Message, "last Pod web-7d4b9-x2x: Running, app: waiting: CrashLoopBackOff, sidecar: terminated, exit code 1 (Error)") {
			t.Errorf("blocker: %+v", b)
		}
		if strings.Contains(b.Message, "hunter2") || strings.Contains(c.Message, "hunter2") {
			t.Errorf("a value in the status: %+v, %s", b, c.Message)
		}
		if hasLogs := strings.Contains(b.LogTail, "panic: password=hunter2"); hasLogs != chartOutput {
			t.Errorf("--status-chart-output %v: logTail %q", chartOutput, b.LogTail)
		}
	}
	if note := status.EventNote(nil, de); strings.Contains(note, "hunter2") || !strings.HasPrefix(note, "revision 2 of release web degraded") {
		t.Errorf("event note: %s", note)
	}
}
