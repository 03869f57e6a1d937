package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
)

func int32p(n int32) *int32 { return &n }

// TestWatchOf: the fields of a watch window map to the lifecycle's options, with a tolerance of
// 30s and no restart by default, the remediation as rollbackOnFailure says unless set; no
// watchFor, or 0, is no window at all; a negative value or an unknown remediation is refused,
// named by its field.
func TestWatchOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   v1alpha1.WatchSpec
		want lifecycle.WatchOptions
	}{
		{"none", v1alpha1.WatchSpec{}, lifecycle.WatchOptions{}},
		{"zero", v1alpha1.WatchSpec{WatchFor: duration(0), WatchRestarts: int32p(3)}, lifecycle.WatchOptions{}},
		{"defaults", v1alpha1.WatchSpec{WatchFor: duration(time.Minute)},
			lifecycle.WatchOptions{For: time.Minute, Tolerance: 30 * time.Second, Remediation: lifecycle.RemediateAsFailure}},
		{"all", v1alpha1.WatchSpec{WatchFor: duration(time.Minute), WatchTolerance: duration(0), WatchRestarts: int32p(2), WatchRemediation: v1alpha1.WatchRemediationRollback},
			lifecycle.WatchOptions{For: time.Minute, Tolerance: 0, Restarts: 2, Remediation: lifecycle.RemediateRollback}},
		{"none remediation", v1alpha1.WatchSpec{WatchFor: duration(time.Minute), WatchRemediation: v1alpha1.WatchRemediationNone},
			lifecycle.WatchOptions{For: time.Minute, Tolerance: 30 * time.Second, Remediation: lifecycle.RemediateNone}},
	} {
		got, err := watchOf("upgrade", tt.in)
		if err != nil || got != tt.want {
			t.Errorf("%s: %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
	for field, in := range map[string]v1alpha1.WatchSpec{
		"upgrade.watchFor":         {WatchFor: duration(-time.Second)},
		"upgrade.watchTolerance":   {WatchFor: duration(time.Minute), WatchTolerance: duration(-time.Second)},
		"upgrade.watchRestarts":    {WatchFor: duration(time.Minute), WatchRestarts: int32p(-1)},
		"upgrade.watchRemediation": {WatchFor: duration(time.Minute), WatchRemediation: "Rollforward"},
	} {
		_, err := watchOf("upgrade", in)
		var se *SpecError
		if !errors.As(err, &se) || se.Field != field || se.Reason != ReasonInvalidSpec {
			t.Errorf("%+v: %v, want an invalid spec.%s", in, err, field)
		}
	}
}

// TestDesiredWatch: spec.install's window goes to the install the upgrade makes, spec.upgrade's
// to the upgrade; a window implies the wait even with disableWait.
func TestDesiredWatch(t *testing.T) {
	rel := &v1alpha1.Release{Spec: v1alpha1.ReleaseSpec{
		Chart:   v1alpha1.ChartSource{Repository: "https://charts.example.com", Name: "web"},
		Install: &v1alpha1.InstallSpec{WatchSpec: v1alpha1.WatchSpec{WatchFor: duration(2 * time.Minute)}},
		Upgrade: &v1alpha1.UpgradeSpec{OperationSpec: v1alpha1.OperationSpec{DisableWait: true},
			WatchSpec: v1alpha1.WatchSpec{WatchFor: duration(time.Minute), WatchRestarts: int32p(1), WatchRemediation: v1alpha1.WatchRemediationNone}},
	}}
	rel.Name, rel.Namespace = "web", "apps"
	d, err := desiredOf(rel)
	if err != nil {
		t.Fatal(err)
	}
	up := d.wait(d.Upgrade.OperationSpec, d.UpgradeWatch)
	if !up.Wait || up.Watch != (lifecycle.WatchOptions{For: time.Minute, Tolerance: 30 * time.Second, Restarts: 1, Remediation: lifecycle.RemediateNone}) {
		t.Errorf("upgrade's wait options: %+v", up)
	}
	in := d.wait(d.Install.OperationSpec, d.InstallWatch)
	if !in.Wait || in.Watch.For != 2*time.Minute || in.Watch.Remediation != lifecycle.RemediateAsFailure {
		t.Errorf("install's wait options: %+v", in)
	}
	if !d.waits("upgrade") || d.watchFor("install") != 2*time.Minute || d.watchFor("upgrade") != time.Minute || !d.watches() {
		t.Errorf("waits %v, windows %s and %s", d.waits("upgrade"), d.watchFor("install"), d.watchFor("upgrade"))
	}
	rel.Spec.Install, rel.Spec.Upgrade = nil, &v1alpha1.UpgradeSpec{OperationSpec: v1alpha1.OperationSpec{DisableWait: true}}
	if d, err = desiredOf(rel); err != nil {
		t.Fatal(err)
	}
	if w := d.wait(d.Upgrade.OperationSpec, d.UpgradeWatch); w.Wait || w.Watch != (lifecycle.WatchOptions{}) || d.watches() || d.waits("upgrade") {
		t.Errorf("without a window, disableWait: %+v", w)
	}
}

// TestCheckWindow: a window must be shorter than the operation's timeout, and than two thirds of
// it when the operation keeps the last third for rolling back (rollbackOnFailure, or
// watchRemediation Rollback; None keeps it too with rollbackOnFailure, which still applies to
// the other failures). What does not fit is refused with WatchWindowTooLong, saying the limit.
func TestCheckWindow(t *testing.T) {
	w := func(d time.Duration, r lifecycle.Remediation) lifecycle.WatchOptions {
		return lifecycle.WatchOptions{For: d, Tolerance: 30 * time.Second, Remediation: r}
	}
	for _, tt := range []struct {
		w        lifecycle.WatchOptions
		rollback bool
		timeout  time.Duration
		limit    time.Duration // 0: fits
	}{
		{lifecycle.WatchOptions{}, true, time.Second, 0},
		{w(4*time.Minute, ""), false, 5 * time.Minute, 0},
		{w(5*time.Minute, ""), false, 5 * time.Minute, 5 * time.Minute},
		{w(3*time.Minute, ""), true, 5 * time.Minute, 0},
		{w(4*time.Minute, ""), true, 6 * time.Minute, 4 * time.Minute},
		{w(4*time.Minute, lifecycle.RemediateRollback), false, 6 * time.Minute, 4 * time.Minute},
		{w(4*time.Minute, lifecycle.RemediateNone), true, 6 * time.Minute, 4 * time.Minute},
		{w(4*time.Minute, lifecycle.RemediateNone), false, 6 * time.Minute, 0},
	} {
		err := checkWindow("upgrade", tt.w, tt.rollback, tt.timeout, false)
		var we *WatchWindowError
		switch {
		case tt.limit == 0 && err != nil:
			t.Errorf("%+v, rollback %v, timeout %s: %v, want it to fit", tt.w, tt.rollback, tt.timeout, err)
		case tt.limit != 0 && (!errors.As(err, &we) || we.Limit != tt.limit):
			t.Errorf("%+v, rollback %v, timeout %s: %v, want a limit of %s", tt.w, tt.rollback, tt.timeout, err, tt.limit)
		case tt.limit != 0 && reasonOf(err, ReasonFailed) != ReasonWatchWindowTooLong:
			t.Errorf("reason of %v: %s", err, reasonOf(err, ReasonFailed))
		}
	}
	err := checkWindow("upgrade", w(4*time.Minute, ""), true, 6*time.Minute, false)
	want := "spec.upgrade.watchFor 4m0s does not fit in the timeout of 6m0s: the operation rolls back on failure and keeps the last third of its time for it, so the window must be shorter than 4m0s; shorten watchFor, or lengthen spec.timeout"
	if err == nil || err.Error() != want {
		t.Errorf("message:\n%v\nwant:\n%s", err, want)
	}
	err = checkWindow("install", w(time.Hour, ""), false, time.Hour, true)
	if err == nil || !strings.Contains(err.Error(), "spec.install.watchFor 1h0m0s does not fit in the controller's maximum timeout of 1h0m0s (--max-timeout)") {
		t.Errorf("capped: %v", err)
	}
}

// TestWindowTooLongStalls: a window that does not fit makes the Release Stalled and not Ready,
// with reason WatchWindowTooLong and the message that says what to change.
func TestWindowTooLongStalls(t *testing.T) {
	d := &desired{Timeout: 5 * time.Minute, UpgradeWatch: lifecycle.WatchOptions{For: 5 * time.Minute}}
	err := checkWindows(d, false)
	if err == nil {
		t.Fatal("a window as long as the timeout fits")
	}
	rel := &v1alpha1.Release{}
	markFailed(rel, reasonOf(err, ReasonInvalidSpec), err, true)
	for _, typ := range []string{ConditionReady, ConditionStalled} {
		c := meta.FindStatusCondition(rel.Status.Conditions, typ)
		wantStatus := metav1.ConditionTrue
		if typ == ConditionReady {
			wantStatus = metav1.ConditionFalse
		}
		if c == nil || c.Status != wantStatus || c.Reason != ReasonWatchWindowTooLong || !strings.Contains(c.Message, "spec.upgrade.watchFor 5m0s does not fit") {
			t.Errorf("%s: %+v", typ, c)
		}
	}
}

// TestWatchingReport: the window's step (watch/REVISION) is told in the Reconciling and Ready
// conditions, the others left as they are.
func TestWatchingReport(t *testing.T) {
	if r, ok := watchStep("watch/2"); !ok || r != 2 {
		t.Errorf("watch/2: %d, %v", r, ok)
	}
	for _, s := range []string{"wait-ready/2", "watch/", "watch/x", "record/deployed/2"} {
		if _, ok := watchStep(s); ok {
			t.Errorf("%s is read as a watch window", s)
		}
	}
	msg := watchingMessage(2, time.Minute, time.Minute)
	if msg != "revision 2 is Ready; watching its objects for 1m0s" {
		t.Errorf("message: %s", msg)
	}
	if resumed := watchingMessage(2, 19*time.Second+400*time.Millisecond, 40*time.Second); resumed != "revision 2 is Ready; watching its objects for the 19s left of its 40s window" {
		t.Errorf("resumed message: %s", resumed)
	}
	rel := &v1alpha1.Release{}
	rel.Generation = 3
	markReconciling(rel, "upgrade of chart web 0.2.0")
	setCondition(rel, ConditionReleased, metav1.ConditionTrue, ReasonInstallSucceeded, "installed")
	got := watchingConditions(rel.Status.Conditions, rel.Generation, msg)
	for _, typ := range []string{ConditionReconciling, ConditionReady} {
		if c := meta.FindStatusCondition(got, typ); c == nil || c.Message != msg || c.Reason != ReasonProgressing || c.ObservedGeneration != 3 {
			t.Errorf("%s: %+v", typ, c)
		}
	}
	if c := meta.FindStatusCondition(got, ConditionReleased); c == nil || c.Message != "installed" {
		t.Errorf("Released: %+v", c)
	}
	if c := meta.FindStatusCondition(rel.Status.Conditions, ConditionReady); c.Message == msg {
		t.Error("the Release's own conditions were changed")
	}
}
