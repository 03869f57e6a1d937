package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// ConditionTested says how the chart's tests went after the last install or upgrade; it is
// present only while spec.test.enable is set.
const ConditionTested = "Tested"

const (
	ReasonTestSucceeded = "TestSucceeded"
	ReasonTestFailed    = "TestFailed"
)

// testRules is spec.test, checked.
type testRules struct {
	Enable           bool
	Include, Exclude []string
}

// testOf checks spec.test.
func testOf(s *v1alpha1.TestSpec) (testRules, error) {
	if s == nil {
		return testRules{}, nil
	}
	var o lifecycle.TestOptions
	for i, f := range s.Filters {
		if !o.AddFilter(f) {
			return testRules{}, invalid(fmt.Sprintf("test.filters[%d]", i), "%q selects no test: write name=NAME to run only NAME, or !name=NAME to skip it", f)
		}
	}
	return testRules{Enable: s.Enable, Include: o.Include, Exclude: o.Exclude}, nil
}

// runTests runs the chart's tests after an install or upgrade that started at start, within
// what is left of the operation's timeout, as the Release's ServiceAccount. They hold the
// release's lease, as the operations do (lifecycle.Test), waiting for it within that time should
// another operation have taken it since the install or upgrade. A failure makes rel not Ready,
// naming the test; the tests are not run again until the next install or upgrade.
func (r *Reconciler) runTests(ctx context.Context, rel *v1alpha1.Release, d *desired, clients *kube.Clients, events func(engine.Event), start time.Time) {
	if !d.Test.Enable {
		meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionTested)
		return
	}
	left := d.Timeout - time.Since(start)
	if left <= 0 {
		// The operation used its whole deadline: the tests get none (0 would mean the default).
		left = time.Nanosecond
	}
	began := time.Now()
	deps, err := r.depsFor(d, clients, events)
	var res *lifecycle.TestResult
	if err == nil {
		res, err = lifecycle.Test(ctx, deps, lifecycle.TestOptions{
			Name: d.ReleaseName, Timeout: left, Include: d.Test.Include, Exclude: d.Test.Exclude, WaitForLock: true,
		})
	}
	if ctx.Err() != nil {
		return // the controller is stopping: nothing is known of the tests
	}
	if err != nil {
		markTestFailed(rel, err)
		r.event(ctx, rel, corev1.EventTypeWarning, ReasonTestFailed, "test", status.EventNote(status.RedactorOf(ctx), err))
		return
	}
	msg := testSummary(res.Release, began)
	setCondition(rel, ConditionTested, metav1.ConditionTrue, ReasonTestSucceeded, msg)
	r.event(ctx, rel, corev1.EventTypeNormal, ReasonTestSucceeded, "test", msg)
}

// markTestFailed says that the tests of the deployed revision failed, and which.
func markTestFailed(rel *v1alpha1.Release, err error) {
	setCondition(rel, ConditionTested, metav1.ConditionFalse, ReasonTestFailed, errorLine(err))
	markFailed(rel, ReasonTestFailed, err, true)
	for i := range rel.Status.Blockers {
		if rel.Status.Blockers[i].Kind == "hook" {
			rel.Status.Blockers[i].Next = "fix the test or what it tests: the tests run again after the next install or upgrade (a change of values or chart version), skipping those test.filters excludes (!name=NAME); or set test.enable to false, which stops running tests and clears this failure"
		}
	}
}

// keepTestFailure keeps rel not Ready while the tests of its deployed revision have failed and
// tests are enabled; it reports whether they have. Without tests, it forgets their outcome.
func keepTestFailure(rel *v1alpha1.Release, d *desired) bool {
	if !d.Test.Enable {
		meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionTested)
		return false
	}
	tested := meta.FindStatusCondition(rel.Status.Conditions, ConditionTested)
	if tested == nil || tested.Status != metav1.ConditionFalse {
		return false
	}
	// The same outcome, for the current generation: the blockers stay as they are.
	for _, t := range []string{ConditionTested, ConditionReady, ConditionStalled} {
		if c := meta.FindStatusCondition(rel.Status.Conditions, t); c != nil {
			setCondition(rel, t, c.Status, c.Reason, c.Message)
		}
	}
	rel.Status.ObservedGeneration = rel.Generation
	return true
}

// testSummary says which tests of rel ran since began.
func testSummary(rel *release.Release, began time.Time) string {
	var ran []string
	for _, h := range rel.Hooks {
		// Only tests run in a test run.
		if !h.LastRun.StartedAt.IsZero() && !h.LastRun.StartedAt.Before(began) {
			ran = append(ran, h.Name)
		}
	}
	if len(ran) == 0 {
		return fmt.Sprintf("release %s revision %d has no tests to run", rel.Name, rel.Version)
	}
	slices.Sort(ran)
	return fmt.Sprintf("the tests of release %s revision %d succeeded: %s", rel.Name, rel.Version, joinBounded(ran, 20))
}
