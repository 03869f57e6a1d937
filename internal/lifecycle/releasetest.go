package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// TestOptions describe a run of a release's tests (helm test).
type TestOptions struct {
	Name string
	// Timeout bounds the whole run; 0 means five minutes.
	Timeout time.Duration
	// Include and Exclude select tests by name (--filter name=X, --filter '!name=X'); no
	// Include runs every test not excluded.
	Include, Exclude []string
	// Logs keeps the logs of the tests' Pods, read before any test is deleted.
	Logs bool
	// WaitForLock waits (within Timeout) for the release's lease when another operation holds
	// it, instead of failing at once.
	WaitForLock bool
}

var notName = regexp.MustCompile(`^!\s?name=`)

// AddFilter adds a filter in helm test's --filter form: "name=X" runs only X (with any other
// name=), "!name=X" skips X. It reports false, changing nothing, for any other form.
func (o *TestOptions) AddFilter(f string) bool {
	if name, ok := strings.CutPrefix(f, "name="); ok {
		o.Include = append(o.Include, name)
		return true
	}
	if notName.MatchString(f) {
		o.Exclude = append(o.Exclude, notName.ReplaceAllLiteralString(f, ""))
		return true
	}
	return false
}

// TestResult is what a run of a release's tests did.
type TestResult struct {
	// Result holds the last revision, with the last run of each test recorded (Release), the
	// plans the run executed (Runs: an interrupted operation it finished first, then the tests'
	// own) and how long it took.
	Result
	// Logs are the logs of each test that ran, in the order they ran (with Logs).
	Logs []HookLogs
}

// statusTested is the Status of the Record step that records the last run of each test: the
// revision's own status stays as it is.
const statusTested = "tested"

// Test runs the test hooks of a release's last revision in Helm's order and with Helm's delete
// policies, each to an observed outcome, stops at the first that fails, and records each test's
// last run in the revision (helm status shows them). It is an operation: it holds the release's
// lease (waiting for it with WaitForLock), finishes an operation left interrupted first, and
// executes its plan, the test hooks and then the record, journaled. A test run that ends, even
// in a failure, deletes its journal; one left behind (berth was killed) is deleted by the next
// command on the release.
func Test(ctx context.Context, d Deps, o TestOptions) (*TestResult, error) {
	var logs []HookLogs
	w := WaitOptions{Timeout: o.Timeout, WaitForLock: o.WaitForLock}
	res, err := d.revisionOperation(ctx, Wanted{Operation: release.OpTest}, o.Name, w, NoDryRun, func(ctx context.Context, d *operation, _ Action) (*release.Release, error) {
		t := &testRun{d: d, o: o}
		rel, err := t.run(ctx)
		logs = t.logs
		return rel, err
	})
	if res.Release == nil {
		return nil, err // no test ran: the lease, the release or its hooks could not be had
	}
	return &TestResult{Result: *res, Logs: logs}, err
}

// testRun is one run of a release's tests: it runs the lifecycle steps of its plan.
type testRun struct {
	d   *operation
	o   TestOptions
	rel *release.Release
	// logs are the logs the run was asked to keep.
	logs []HookLogs
	// recorded says the Record step was attempted.
	recorded bool
}

// run runs the tests of the release's last revision as a plan, journaled, and returns that
// revision. The record is written by a plan step even when a test failed, the deadline passed or
// a signal stopped the run (see recordAfter), unless the release is another operation's now.
func (t *testRun) run(ctx context.Context) (*release.Release, error) {
	d := t.d
	rel, err := d.Store.Last(ctx, t.o.Name)
	if err != nil {
		return nil, err
	}
	t.rel = rel
	pl, err := t.plan()
	if err != nil {
		return rel, err
	}
	if pl, err = d.begin(ctx, release.OpTest, rel.Version, pl, release.JournalOptions{}); err == nil {
		opts := engine.DefaultOptions()
		opts.Events = d.Events
		_, err = d.execute(ctx, release.OpTest, rel.Version, pl, t, opts)
	}
	if err != nil && !t.recorded {
		// The plan stopped before its record: the record runs as a plan of its own.
		wctx, cancel := d.writeContext(ctx)
		defer cancel()
		err = errors.Join(err, d.recordAfter(wctx, release.OpTest, rel.Version, t.recordStep(), t))
	}
	return rel, err
}

// plan is the run's plan: the selected tests of the revision, in order, then the record of
// their last runs.
func (t *testRun) plan() (*plan.Plan, error) {
	tests, err := eventHooks(t.d.Cluster, t.rel, resource.HookTest, false)
	if err != nil {
		return nil, err
	}
	tests.hooks = slices.DeleteFunc(tests.hooks, func(h resource.Hook) bool { return !t.selected(h) })
	p := &plan.Plan{Steps: appendHooks(nil, tests)}
	p.Steps = append(p.Steps, t.recordStep())
	return p, nil
}

// recordStep is the Record step of the run: the last run of each test, in the revision.
func (t *testRun) recordStep() plan.Step {
	v := t.rel.Version
	return plan.Step{ID: fmt.Sprintf("record/%s/%d", statusTested, v), Action: plan.Record,
		Status: statusTested, Revision: v,
		Reason: fmt.Sprintf("record the last run of each test in revision %d, which stays %s", v, t.rel.Info.Status)}
}

// selected reports whether the run's filters select test h.
func (t *testRun) selected(h resource.Hook) bool {
	name := h.Identity.Name
	return !slices.Contains(t.o.Exclude, name) && (len(t.o.Include) == 0 || slices.Contains(t.o.Include, name))
}

// RunStep runs the tests, or records their last runs (engine.StepRunner).
func (t *testRun) RunStep(ctx context.Context, step plan.Step) error {
	switch {
	case step.Action == plan.RunHooks && step.Hook == string(resource.HookTest):
		event := resource.HookTest
		logs, err := t.d.runEventHooks(ctx, t.rel, event, hookRunOptions{include: t.selected, logs: t.o.Logs,
			succeeded: func(ctx context.Context) error { return t.d.recordHookSucceeded(ctx, event) }})
		t.logs = logs
		return err
	case step.Action == plan.Record && step.Status == statusTested:
		return t.record(ctx)
	}
	return fmt.Errorf("%s: not a step of a test run", step.ID)
}

// record writes the revision with the last run of each test, once the lease is confirmed as
// the run's.
func (t *testRun) record(ctx context.Context) error {
	t.recorded = true
	err := t.d.guard(ctx)
	if err == nil {
		err = t.d.Store.Update(ctx, t.rel)
	}
	if err != nil {
		return fmt.Errorf("record the test run in release %s revision %d: %w", t.rel.Name, t.rel.Version, err)
	}
	return nil
}
