package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

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
	// Release is the last revision, with the last run of each test recorded.
	Release *release.Release
	// Logs are the logs of each test that ran, in the order they ran (with Logs).
	Logs []HookLogs
}

// Test runs the test hooks of a release's last revision in Helm's order and with Helm's delete
// policies, each to an observed outcome, stops at the first that fails, and records each test's
// last run in the revision (helm status shows them). It holds the release's lease while it runs,
// as the operations do: the record it writes is theirs too.
func Test(ctx context.Context, d Deps, o TestOptions) (*TestResult, error) {
	var res *TestResult
	w := WaitOptions{Timeout: o.Timeout, WaitForLock: o.WaitForLock}
	op := &operation{name: o.Name, stop: ctx, holder: d.Holder, now: d.now}
	err := d.hold(ctx, ctx, o.Name, w, op, func(ctx context.Context, d Deps) error {
		var err error
		res, err = d.test(ctx, o)
		return err
	})
	return res, err
}

// test is Test under the release's lease.
func (d Deps) test(ctx context.Context, o TestOptions) (*TestResult, error) {
	rel, err := d.Store.Last(ctx, o.Name)
	if err != nil {
		return nil, err
	}
	include := func(h resource.Hook) bool {
		name := h.Identity.Name
		return !slices.Contains(o.Exclude, name) && (len(o.Include) == 0 || slices.Contains(o.Include, name))
	}
	logs, err := d.runEventHooks(ctx, rel, resource.HookTest, hookRunOptions{include: include, logs: o.Logs})
	res := &TestResult{Release: rel, Logs: logs}
	// The record is written even when a test failed or the deadline passed, unless the release
	// is another operation's now.
	wctx, cancel := d.op.writeContext(ctx)
	defer cancel()
	werr := d.op.guard(wctx)
	if werr == nil {
		werr = d.Store.Update(wctx, rel)
	}
	if werr != nil {
		werr = fmt.Errorf("record the test run in release %s revision %d: %w", rel.Name, rel.Version, werr)
		return res, errors.Join(err, werr)
	}
	return res, err
}
