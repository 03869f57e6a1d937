// Package engine executes a plan step by step against the cluster, emitting an event for
// everything it does and stopping at the first step that fails.
package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/par"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

// Applier changes objects.
type Applier interface {
	Apply(ctx context.Context, obj *unstructured.Unstructured, opts cluster.ApplyOptions) (*unstructured.Unstructured, error)
	Delete(ctx context.Context, id resource.Identity, uid types.UID, opts cluster.DeleteOptions) (cluster.DeleteResult, error)
	// ResetMapper makes kinds defined by just-installed CRDs known.
	ResetMapper()
}

// Tracker waits for objects.
type Tracker interface {
	WaitReady(ctx context.Context, ids []resource.Identity, opts readiness.Options, progress cluster.Progress) error
	WaitAbsent(ctx context.Context, targets map[resource.Identity]types.UID, progress cluster.Progress) error
}

// Diagnoser finds out why an object could not be changed (err) or did not go away (err nil).
type Diagnoser interface {
	Diagnose(ctx context.Context, id resource.Identity, operation string, err error) cluster.Blocker
}

// Cluster is what the engine needs of the cluster.
type Cluster interface {
	Applier
	Tracker
	Diagnoser
}

// StepRunner runs the steps of the lifecycle's own actions (record, hooks, adopt, validate,
// watch): the engine decides when, the runner how.
type StepRunner interface {
	RunStep(ctx context.Context, step plan.Step) error
}

// Journal records an execution's progress, so that an interrupted one resumes where it stopped.
type Journal interface {
	// Done reports whether the step with id completed in an earlier, interrupted execution: it
	// is not run again.
	Done(id string) bool
	// Checkpoint is called before each step; an error (a signal asked to stop) ends the
	// execution there.
	Checkpoint() error
	// Completed records that step i of p completed.
	Completed(ctx context.Context, p *plan.Plan, i int) error
}

// Options change how a plan is executed.
type Options struct {
	// Objects are the records of the operation's objects: the desired object of each that the
	// plan's apply steps name (Object.Desired), and the live one as the operation found it
	// before its first change (Object.Live), to tell created from configured.
	Objects *plan.Objects
	// Unchanged are the objects found live (Objects) that their apply would leave as they are,
	// as the operation found before its first write (from the live objects, or their dry run):
	// no apply is sent for them, and they are unchanged. Objects whose apply may do more than that
	// showed must not be here. Once a step that runs hooks or adopts objects has run (either may
	// change objects after they were read), every object is applied.
	Unchanged map[resource.Identity]bool
	// Readiness are the rules of wait-ready steps.
	Readiness readiness.Options
	// Delete are the options of every deletion (propagation: foreground when empty).
	Delete cluster.DeleteOptions
	// Concurrency bounds how many objects of one step are handled at once.
	Concurrency int
	// Events is told of everything the engine does; it must not block for long.
	Events func(Event)
	// Steps runs the steps whose actions are the lifecycle's; nil fails them.
	Steps StepRunner
	// Journal records each completed step and skips those an earlier execution completed; nil
	// records nothing.
	Journal Journal
	// Afterwards gives the context of what is said of a step that may outlive the step's
	// context: the diagnosis of the objects a wait left pending (its context ended: the deadline
	// came first) or of a deletion refused, within the caller's grace. Nil diagnoses within the
	// step's context.
	Afterwards func(ctx context.Context) (context.Context, context.CancelFunc)
}

// DefaultConcurrency is how many objects of one step are handled at once by default. Helm sends
// all the objects of a kind at once; a bound keeps a chart of thousands from opening as many
// requests. At 16, the requests of a step waited on each other: the dry runs before the first
// change, and the ConfigMaps of a batch, which its Deployments wait for (bench/README.md, "The
// ordered case").
const DefaultConcurrency = 64

// DefaultOptions returns options with sensible defaults.
func DefaultOptions() Options {
	return Options{Concurrency: DefaultConcurrency}
}

// Result is what an execution did: to each object, and step by step.
type Result struct {
	// Changes say what the execution did to each object it applied, left alone or deleted.
	Changes ChangeSet
	// Steps are the steps run, in order, with how long each took; steps an earlier execution
	// completed are not among them.
	Steps []StepRun
}

// StepRun is one step that ran to success.
type StepRun struct {
	ID       string        `json:"id"`
	Action   plan.Action   `json:"action"`
	Duration time.Duration `json:"duration"`
}

// Change is what happened to one object, in the vocabulary berth diff says what would happen in.
type Change = plan.Change

// The changes of a ChangeSet's entries (see plan.Change).
const (
	Created    = plan.Created
	Configured = plan.Configured
	Unchanged  = plan.Unchanged
	Kept       = plan.Kept
	Deleted    = plan.Deleted
	Gone       = plan.Gone
)

// ChangeSet is what an execution did to objects: an entry for each object, in the order of the
// plan's steps and of each step's objects (those of one step are handled together, and listed
// in the step's order), whatever order they completed in. An object a step handles again (one
// replaced: deleted, then created) has one entry, the last step's, in that step's place. The
// objects the plan keeps come last, skipped, when every step ran.
type ChangeSet struct {
	Entries []ChangeSetEntry `json:"entries"`
}

// ChangeSetEntry is what an execution did to one object.
type ChangeSetEntry struct {
	Object resource.Identity `json:"object"`
	Change Change            `json:"change"`
	// Step is the step that did it; empty for a skipped object.
	Step string `json:"step,omitempty"`
	// Took is how long the object's apply or delete took; zero when none was sent.
	Took time.Duration `json:"took"`
}

// Of returns the entry of id and whether there is one.
func (c ChangeSet) Of(id resource.Identity) (ChangeSetEntry, bool) {
	i := slices.IndexFunc(c.Entries, func(e ChangeSetEntry) bool { return e.Object == id })
	if i < 0 {
		return ChangeSetEntry{}, false
	}
	return c.Entries[i], true
}

// add appends the entries of a step, taking the place of earlier entries of the same objects.
func (c *ChangeSet) add(entries []ChangeSetEntry) {
	if len(entries) == 0 {
		return
	}
	c.Entries = slices.DeleteFunc(c.Entries, func(e ChangeSetEntry) bool {
		return slices.ContainsFunc(entries, func(n ChangeSetEntry) bool { return n.Object == e.Object })
	})
	c.Entries = append(c.Entries, entries...)
}

// Execute runs the plan's steps in order, skipping those the journal records as completed and
// recording each one that completes. It returns what it did up to the first failure, and that
// failure wrapped in a *StepError.
func Execute(ctx context.Context, c Cluster, p *plan.Plan, opts Options) (*Result, error) {
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	if opts.Events == nil {
		opts.Events = func(Event) {}
	}
	x := &execution{c: c, opts: opts, res: &Result{Changes: ChangeSet{Entries: []ChangeSetEntry{}}}, entries: map[string]*stepEntries{}}
	bctx, cancel := context.WithCancel(ctx)
	defer func() {
		// A step running beside is not left running past the execution.
		cancel()
		for _, b := range x.beside {
			<-b.done
		}
	}()
	for i, step := range p.Steps {
		if opts.Journal != nil {
			if opts.Journal.Done(step.ID) {
				continue
			}
			if err := opts.Journal.Checkpoint(); err != nil {
				return x.res, err
			}
		}
		if err := x.join(ctx, p, func(b plan.Step) bool { return overlaps(b.Objects, step.Objects) }); err != nil {
			return x.res, err
		}
		if step.Beside {
			x.start(bctx, i, step)
			continue
		}
		start := time.Now()
		opts.Events(Event{Type: StepStarted, Step: step.ID, Message: step.Reason})
		if err := x.finish(ctx, p, i, step, start, x.run(ctx, step)); err != nil {
			return x.res, err
		}
	}
	if err := x.join(ctx, p, func(plan.Step) bool { return true }); err != nil {
		return x.res, err
	}
	for _, id := range p.Kept {
		x.res.Changes.add([]ChangeSetEntry{{Object: id, Change: Kept}})
	}
	return x.res, nil
}

// finish ends step i of p, which started at start and ended with err: it says so, records it
// and returns err as a *StepError.
func (x *execution) finish(ctx context.Context, p *plan.Plan, i int, step plan.Step, start time.Time, err error) error {
	took := time.Since(start)
	x.mu.Lock()
	if se := x.entries[step.ID]; se != nil {
		var entries []ChangeSetEntry
		for _, e := range se.list {
			if e != nil {
				entries = append(entries, *e)
			}
		}
		x.res.Changes.add(entries)
		delete(x.entries, step.ID)
	}
	x.mu.Unlock()
	if err != nil {
		x.opts.Events(Event{Type: StepFailed, Step: step.ID, Message: err.Error(), Duration: took})
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			err = &DeadlineError{Cause: cause, Err: err}
		}
		return &StepError{Step: step.ID, Action: step.Action, Err: err}
	}
	x.res.Steps = append(x.res.Steps, StepRun{ID: step.ID, Action: step.Action, Duration: took})
	x.opts.Events(Event{Type: StepDone, Step: step.ID, Duration: took})
	if x.opts.Journal != nil {
		return x.opts.Journal.Completed(ctx, p, i)
	}
	return nil
}

// overlaps reports whether a and b name an object in common.
func overlaps(a, b []resource.Identity) bool {
	return slices.ContainsFunc(a, func(id resource.Identity) bool { return slices.Contains(b, id) })
}

// besideStep is a step running beside the steps after it.
type besideStep struct {
	i     int
	step  plan.Step
	start time.Time
	done  chan struct{}
	err   error
}

// start starts step i beside the steps after it.
func (x *execution) start(ctx context.Context, i int, step plan.Step) {
	b := &besideStep{i: i, step: step, start: time.Now(), done: make(chan struct{})}
	x.opts.Events(Event{Type: StepStarted, Step: step.ID, Message: step.Reason})
	x.beside = append(x.beside, b)
	go func() {
		defer close(b.done)
		b.err = x.run(ctx, step)
	}()
}

// join waits for the steps running beside for which wanted is true and ends them in plan order;
// the first that failed fails the execution.
func (x *execution) join(ctx context.Context, p *plan.Plan, wanted func(plan.Step) bool) error {
	var rest []*besideStep
	for _, b := range x.beside {
		if !wanted(b.step) {
			rest = append(rest, b)
			continue
		}
		select {
		case <-b.done:
		case <-ctx.Done():
			<-b.done // it ends with ctx
		}
		if err := x.finish(ctx, p, b.i, b.step, b.start, b.err); err != nil {
			return err // the execution ends: whatever still runs beside is waited for then
		}
	}
	x.beside = rest
	return nil
}

// StepError says which step failed.
type StepError struct {
	Step   string
	Action plan.Action
	Err    error
}

func (e *StepError) Error() string { return fmt.Sprintf("step %s: %v", e.Step, e.Err) }
func (e *StepError) Unwrap() error { return e.Err }

// DeadlineError says a step failed because the operation's deadline (or another end of its
// context) came first; Cause is why the context ended.
type DeadlineError struct {
	Cause error
	Err   error
}

func (e *DeadlineError) Error() string { return e.Err.Error() }
func (e *DeadlineError) Unwrap() error { return e.Err }

type execution struct {
	c    Cluster
	opts Options
	mu   sync.Mutex
	res  *Result
	// beside are the steps running beside the current one, in plan order.
	beside []*besideStep
	// stale says a step ran that may have changed objects since they were read (guarded by mu).
	stale bool
	// changers counts the steps run that may change objects besides the engine: hooks, adoptions
	// and removals of hooks (guarded by mu).
	changers int
	// ready are the objects that their own apply returned ready (or, for those left unchanged,
	// whose live object before the operation is ready: their apply would return it), with their
	// readiness, and that no step may have changed since (guarded by mu): a wait-ready step does
	// not wait for them.
	ready map[resource.Identity]readiness.Result
	// entries are what the running apply and delete steps did to their objects, by step ID
	// (guarded by mu); finish adds them to the change set.
	entries map[string]*stepEntries
}

// stepEntries are what one step did to its objects, in the order of the step's objects: nil for
// those it did nothing to (yet).
type stepEntries struct {
	at   map[resource.Identity]int
	list []*ChangeSetEntry
}

// track starts keeping what step does to its objects.
func (x *execution) track(step plan.Step) {
	se := &stepEntries{at: make(map[resource.Identity]int, len(step.Objects)), list: make([]*ChangeSetEntry, len(step.Objects))}
	for i, id := range step.Objects {
		se.at[id] = i
	}
	x.mu.Lock()
	x.entries[step.ID] = se
	x.mu.Unlock()
}

func (x *execution) run(ctx context.Context, step plan.Step) error {
	switch step.Action {
	case plan.Apply:
		x.track(step)
		err := x.each(ctx, step, x.apply)
		if err == nil && resource.OnlyCRDs(step.Objects) {
			x.c.ResetMapper()
		}
		return err
	case plan.Delete:
		x.track(step)
		return x.each(ctx, step, x.delete)
	case plan.WaitReady:
		waited := x.unready(step)
		if len(waited) == 0 {
			return nil
		}
		err := x.c.WaitReady(ctx, waited, x.opts.Readiness, x.progress(step.ID))
		if err == nil && resource.OnlyCRDs(step.Objects) {
			x.c.ResetMapper()
		}
		return err
	case plan.Record, plan.RunHooks, plan.Adopt, plan.Validate, plan.RemoveHooks, plan.CreateNamespace, plan.DeleteNamespace, plan.Watch:
		if x.opts.Steps == nil {
			return fmt.Errorf("no runner for %s steps", step.Action)
		}
		if step.Action == plan.RunHooks || step.Action == plan.Adopt || step.Action == plan.RemoveHooks {
			x.mu.Lock()
			x.stale = true
			x.changers++
			x.ready = nil
			x.mu.Unlock()
		}
		return x.opts.Steps.RunStep(ctx, step)
	case plan.WaitAbsent:
		targets := make(map[resource.Identity]types.UID, len(step.Objects))
		for _, id := range step.Objects {
			targets[id] = step.UID(id)
		}
		err := x.c.WaitAbsent(ctx, targets, x.progress(step.ID))
		var we *cluster.WaitError
		if errors.As(err, &we) {
			return x.blocked(ctx, step, we.Pending, err)
		}
		return err
	default:
		return fmt.Errorf("unknown action %q", step.Action)
	}
}

// blocked diagnoses the objects a wait left pending, all at once, within the grace of what is
// said after the step's context ended (Options.Afterwards).
func (x *execution) blocked(ctx context.Context, step plan.Step, pending map[resource.Identity]string, cause error) error {
	ids := make([]resource.Identity, 0, len(pending))
	for id := range pending {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, resource.Compare)
	dctx, cancel := x.afterwards(ctx)
	defer cancel()
	blockers := make([]cluster.Blocker, len(ids))
	each := make([]*cluster.Blocker, len(ids))
	for i, id := range ids {
		blockers[i] = cluster.Blocker{Object: id, Kind: cluster.BlockedByOther, Next: "run the command again"}
		each[i] = &blockers[i]
	}
	errs := par.Each(dctx, each, x.opts.Concurrency, func(ctx context.Context, b *cluster.Blocker) error {
		*b = x.c.Diagnose(ctx, b.Object, "DELETE", nil)
		return nil
	})
	for i, err := range errs {
		if err != nil {
			// Not diagnosed: the grace ended first.
			blockers[i].Message = "state unknown: " + err.Error()
		}
	}
	return &BlockedError{Step: step.ID, Blockers: blockers, Cause: cause}
}

// afterwards is the context of what is said of a step once ctx may have ended: see
// Options.Afterwards.
func (x *execution) afterwards(ctx context.Context) (context.Context, context.CancelFunc) {
	if x.opts.Afterwards == nil {
		return ctx, func() {}
	}
	return x.opts.Afterwards(ctx)
}

// each runs fn for every object of the step, concurrently, and joins their errors.
func (x *execution) each(ctx context.Context, step plan.Step, fn func(context.Context, plan.Step, resource.Identity) error) error {
	errs := par.Each(ctx, step.Objects, x.opts.Concurrency, func(ctx context.Context, id resource.Identity) error {
		return fn(ctx, step, id)
	})
	// Blockers of several objects make one BlockedError.
	var blocked *BlockedError
	var rest []error
	for _, err := range errs {
		if err == nil {
			continue
		}
		var be *BlockedError
		if errors.As(err, &be) {
			if blocked == nil {
				blocked = &BlockedError{Step: step.ID}
			}
			blocked.Blockers = append(blocked.Blockers, be.Blockers...)
			blocked.Cause = errors.Join(blocked.Cause, be.Cause)
			continue
		}
		rest = append(rest, err)
	}
	if blocked != nil {
		return errors.Join(append([]error{blocked}, rest...)...)
	}
	return errors.Join(rest...)
}

func (x *execution) apply(ctx context.Context, step plan.Step, id resource.Identity) error {
	f := x.opts.Objects.Get(id)
	if f == nil || f.Desired == nil {
		return fmt.Errorf("%s: not among the desired objects", id)
	}
	if x.unchanged(id) {
		x.record(step.ID, id, Unchanged, 0)
		// Its apply would answer the live object as it is: that is what is judged.
		x.applied(id, f.Live, x.changersNow())
		return nil
	}
	// What the apply does is decided before it is sent: it creates the object when there was
	// none, or an earlier step deleted it (a replacement), and configures it otherwise.
	x.mu.Lock()
	earlier, _ := x.res.Changes.Of(id)
	x.mu.Unlock()
	change := Created
	if f.Live != nil && earlier.Change != Deleted && earlier.Change != Gone {
		change = Configured
	}
	changers := x.changersNow()
	start := time.Now()
	answer, err := x.c.Apply(ctx, f.Desired, cluster.ApplyOptions{})
	if err != nil {
		return err
	}
	x.record(step.ID, id, change, time.Since(start))
	x.applied(id, answer, changers)
	return nil
}

// changersNow is how many steps that may change objects besides the engine have started.
func (x *execution) changersNow() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.changers
}

// applied notes the object of id ready when its apply's answer says so and no step that may
// change objects besides the engine started since the apply was sent (changers is how many had
// then). A CustomResourceDefinition is always waited for: its kinds must also be served.
func (x *execution) applied(id resource.Identity, answer *unstructured.Unstructured, changers int) {
	if answer == nil || id.IsCRD() {
		return
	}
	r := readiness.Compute(answer, x.opts.Readiness)
	x.mu.Lock()
	defer x.mu.Unlock()
	if r.State != readiness.Ready || x.changers != changers {
		delete(x.ready, id)
		return
	}
	if x.ready == nil {
		x.ready = map[resource.Identity]readiness.Result{}
	}
	x.ready[id] = r
}

// unready returns the objects of the wait-ready step that must be waited for: all but those their
// own apply returned ready (execution.ready), which are said to be ready at once.
func (x *execution) unready(step plan.Step) []resource.Identity {
	x.mu.Lock()
	waited := make([]resource.Identity, 0, len(step.Objects))
	var ready []resource.Identity
	var results []readiness.Result
	for _, id := range step.Objects {
		r, ok := x.ready[id]
		if !ok {
			waited = append(waited, id)
			continue
		}
		ready = append(ready, id)
		results = append(results, r)
	}
	x.mu.Unlock()
	progress := x.progress(step.ID)
	for i, id := range ready {
		progress(id, results[i])
	}
	return waited
}

// unchanged reports whether the object of id is among those whose apply would change nothing
// (Options.Unchanged), and nothing ran since that may have changed it.
func (x *execution) unchanged(id resource.Identity) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return !x.stale && x.opts.Unchanged[id] && x.opts.Objects.LiveOf(id) != nil
}

// record says what happened to the object of id, and how long it took.
func (x *execution) record(stepID string, id resource.Identity, change Change, took time.Duration) {
	x.mu.Lock()
	if se := x.entries[stepID]; se != nil {
		if i, ok := se.at[id]; ok {
			se.list[i] = &ChangeSetEntry{Object: id, Change: change, Step: stepID, Took: took}
		}
	}
	x.mu.Unlock()
	x.opts.Events(Event{Type: ObjectChanged, Step: stepID, Object: id, Message: string(change)})
}

func (x *execution) delete(ctx context.Context, step plan.Step, id resource.Identity) error {
	x.mu.Lock()
	delete(x.ready, id)
	x.mu.Unlock()
	start := time.Now()
	r, err := x.c.Delete(ctx, id, step.UID(id), x.opts.Delete)
	took := time.Since(start)
	if err != nil {
		// Say why with the request's own context: it may be what ran out.
		dctx, cancel := x.afterwards(ctx)
		b := x.c.Diagnose(dctx, id, "DELETE", err)
		cancel()
		return &BlockedError{Step: step.ID, Blockers: []cluster.Blocker{b}, Cause: err}
	}
	change := Deleted
	if r == cluster.AlreadyGone {
		change = Gone
	}
	x.record(step.ID, id, change, took)
	return nil
}

func (x *execution) progress(stepID string) cluster.Progress {
	return func(id resource.Identity, r readiness.Result) {
		x.opts.Events(Event{Type: ObjectProgress, Step: stepID, Object: id, State: r.State, Message: r.Message})
	}
}
