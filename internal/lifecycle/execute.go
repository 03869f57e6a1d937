package lifecycle

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
)

// execute runs the operation's plan for revision through the engine, journaled, with steps
// running the lifecycle's own steps, and adds what it did to the operation's runs.
func (o *operation) execute(ctx context.Context, op release.Operation, revision int, pl *plan.Plan, steps engine.StepRunner, opts engine.Options) (*engine.Result, error) {
	opts.Steps = steps
	if opts.Journal == nil {
		opts.Journal = o
	}
	// What blocked a step is diagnosed within the operation's grace.
	opts.Afterwards = o.graceContext
	res, err := engine.Execute(ctx, o.Cluster, pl, opts)
	if res != nil {
		o.runs.add(Run{Operation: op, Revision: revision, Plan: pl, Changes: res.Changes, Steps: res.Steps})
	}
	return res, err
}

// executeOnce runs pl, whose steps can all be run again, through the engine without writing a
// journal: a plan of steps before the release's journal can be kept (its namespace is created),
// or of deletions an interrupted run of them finishes anyway. A signal still stops it between
// steps.
func (o *operation) executeOnce(ctx context.Context, op release.Operation, revision int, pl *plan.Plan, steps engine.StepRunner) error {
	opts := engine.DefaultOptions()
	opts.Events = o.Events
	opts.Journal = unjournalled{o}
	_, err := o.execute(ctx, op, revision, pl, steps, opts)
	return err
}

// unjournalled is the engine.Journal of a plan that keeps none: it only stops at a signal.
type unjournalled struct{ d *operation }

func (u unjournalled) Done(string) bool                                 { return false }
func (u unjournalled) Checkpoint() error                                { return u.d.checkpoint() }
func (u unjournalled) Completed(context.Context, *plan.Plan, int) error { return nil }

// recordAfter runs step, the record of an operation that failed or stopped, as a plan of its own
// with the runner steps, once the operation's own plan ended (ctx is then a graceContext). It
// journals nothing, and runs even after a signal, whose record must be written all the same: the
// operation's journal stays as its own plan left it, and a crash before the record is written is
// finished from there.
func (o *operation) recordAfter(ctx context.Context, op release.Operation, revision int, step plan.Step, steps engine.StepRunner) error {
	opts := engine.DefaultOptions()
	opts.Events = o.Events
	opts.Journal = unstoppable{}
	_, err := o.execute(ctx, op, revision, &plan.Plan{Steps: []plan.Step{step}}, steps, opts)
	return err
}

// unstoppable is the engine.Journal of a plan that keeps none and that a signal does not stop.
type unstoppable struct{}

func (unstoppable) Done(string) bool                                 { return false }
func (unstoppable) Checkpoint() error                                { return nil }
func (unstoppable) Completed(context.Context, *plan.Plan, int) error { return nil }

// Result is what an install, upgrade or rollback did.
type Result struct {
	// Release is the newest revision afterwards: the one the operation recorded, or for a dry
	// run the one it would record.
	Release *release.Release `json:"-"`
	// Runs are the plans the operation executed, in order: an interrupted operation it finished
	// first, its own, and the undo of a failure (rollback on failure).
	Runs []Run `json:"runs,omitempty"`
	// Plan, for a server-side dry run, is the plan the operation would execute.
	Plan *plan.Plan `json:"plan,omitempty"`
	// Actions are what the operation did, in order, as Next decided them: what an interrupted
	// operation needed first (finish, undo, remove-hooks), then the operation asked for (an
	// upgrade with install of a release that has none installs it). A dry run's is the one it
	// previews.
	Actions []Action `json:"actions,omitempty"`
	// Duration is how long the whole operation took.
	Duration time.Duration `json:"duration"`
}

// Run is one plan an operation executed, and what it did.
type Run struct {
	Operation release.Operation `json:"operation"`
	Revision  int               `json:"revision"`
	Plan      *plan.Plan        `json:"plan"`
	// Changes say what happened to each object applied, left alone or deleted, in the order of
	// the plan's steps, and how long it took.
	Changes engine.ChangeSet `json:"changes"`
	// Steps are the steps that ran to success, with their durations (a step that failed ends
	// the list; steps an interrupted run completed are not in it).
	Steps []engine.StepRun `json:"steps,omitempty"`
}

// runs collects the runs of one operation, and the plan of a dry run.
type runs struct {
	mu      sync.Mutex
	list    []Run
	planned *plan.Plan
}

func (r *runs) plan(p *plan.Plan) {
	if r != nil {
		r.planned = p
	}
}

func (r *runs) add(run Run) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, run)
}

func (r *runs) all() []Run {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list)
}

// engineOptions are the options of the engine's execution of the objects of facts (nil for
// none): the desired objects it applies, and the live ones as the survey found them.
func (o *operation) engineOptions(facts *plan.Objects, w WaitOptions) engine.Options {
	opts := engine.DefaultOptions()
	opts.Objects = facts
	opts.Readiness = readiness.Options{WaitForJobs: w.WaitForJobs, Checks: o.HealthChecks}
	opts.Events = o.Events
	return opts
}

// notify tells of a recovery through the progress events.
func (o *operation) notify(msg string) {
	o.emitter()(engine.Event{Type: engine.StepStarted, Step: "recover", Message: msg})
}
