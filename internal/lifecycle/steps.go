package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// An operation is one plan: what it records, the hooks it runs, what it adopts and validates, and
// the object steps plan.Build orders. This file holds the policy (which steps an install, upgrade,
// rollback or uninstall has, in what order) and the runner of the lifecycle's own steps; the
// engine executes and journals them all alike.

// hookStep is one event's hooks, in the order they run.
type hookStep struct {
	event resource.HookEvent
	hooks []resource.Hook
}

// revisionPolicy is what an install, upgrade or rollback does besides its object steps.
type revisionPolicy struct {
	op       release.Operation
	revision int
	// create records the revision as pending first; not when it is recorded already (an
	// interrupted operation being finished from its record).
	create    bool
	pre, post hookStep
	// adopted are existing objects with fields Helm set.
	adopted []resource.Identity
	// superseded are the revisions that were deployed and are superseded once this one is.
	superseded []int
}

// revisionPlan is the plan of an install, upgrade or rollback: record the revision as pending,
// run the pre hooks, adopt Helm's fields, apply, wait and delete (objects), run the post hooks,
// mark the replaced revisions superseded and the new one deployed.
func revisionPlan(objects *plan.Plan, pol revisionPolicy) *plan.Plan {
	p := &plan.Plan{Kept: objects.Kept}
	if pol.create {
		p.Steps = append(p.Steps, recordStep(pendingStatus(pol.op), pol.revision, "the revision is recorded before anything changes"))
	}
	p.Steps = appendHooks(p.Steps, pol.pre)
	if len(pol.adopted) > 0 {
		p.Steps = append(p.Steps, plan.Step{ID: "adopt", Action: plan.Adopt, Objects: pol.adopted,
			Reason: "berth takes over the fields Helm set, so that what left the chart is removed"})
	}
	p.Steps = append(p.Steps, objects.Steps...)
	p.Steps = appendHooks(p.Steps, pol.post)
	deployed := recordStep(release.StatusDeployed, pol.revision, "the operation completed")
	if len(pol.superseded) > 0 {
		deployed.Supersedes = pol.superseded
		var vs []string
		for _, v := range pol.superseded {
			vs = append(vs, strconv.Itoa(v))
		}
		deployed.Reason += fmt.Sprintf("; revision %s superseded first", strings.Join(vs, ", "))
	}
	p.Steps = append(p.Steps, deployed)
	return p
}

// uninstallPolicy is what an uninstall does besides deleting objects.
type uninstallPolicy struct {
	revision    int
	pre, post   hookStep
	keepHistory bool
}

// uninstallPlan is the plan of an uninstall: every pre-delete hook to completion before anything
// is deleted, the release recorded as uninstalling, the deletions and their waits, the post-delete
// hooks, then the records removed (or kept, marked uninstalled).
func uninstallPlan(objects *plan.Plan, pol uninstallPolicy) *plan.Plan {
	p := &plan.Plan{Kept: objects.Kept}
	p.Steps = appendHooks(p.Steps, pol.pre)
	p.Steps = append(p.Steps, recordStep(release.StatusUninstalling, pol.revision, "deletion starts"))
	p.Steps = append(p.Steps, objects.Steps...)
	p.Steps = appendHooks(p.Steps, pol.post)
	if pol.keepHistory {
		p.Steps = append(p.Steps, recordStep(release.StatusUninstalled, pol.revision, "the history is kept"))
	} else {
		p.Steps = append(p.Steps, plan.Step{ID: "record/purged", Action: plan.Record, Status: statusPurged,
			Reason: "every record of the release is deleted"})
	}
	return p
}

// statusPurged is the Status of the Record step that deletes every record of a release.
const statusPurged = "purged"

func recordStep(status release.Status, revision int, why string) plan.Step {
	return plan.Step{ID: fmt.Sprintf("record/%s/%d", status, revision), Action: plan.Record, Status: string(status), Revision: revision,
		Reason: fmt.Sprintf("record revision %d as %s: %s", revision, status, why)}
}

// appendHooks appends the step that runs the hooks of h, if there are any.
func appendHooks(steps []plan.Step, h hookStep) []plan.Step {
	if len(h.hooks) == 0 {
		return steps
	}
	ids := make([]resource.Identity, len(h.hooks))
	var parts []string
	for i, hk := range h.hooks {
		ids[i] = hk.Identity
		desc := fmt.Sprintf("%s weight %d", hk.Identity.Name, hk.Weight)
		if len(hk.DeletePolicies) > 0 {
			var ps []string
			for _, p := range hk.DeletePolicies {
				ps = append(ps, string(p))
			}
			desc += ", delete " + strings.Join(ps, ",")
		}
		parts = append(parts, desc)
	}
	return append(steps, plan.Step{ID: "hooks/" + string(h.event), Action: plan.RunHooks, Hook: string(h.event), Objects: ids,
		Reason: fmt.Sprintf("%s hooks, in order, each to its outcome: %s", h.event, strings.Join(parts, "; "))})
}

func pendingStatus(op release.Operation) release.Status {
	switch op {
	case release.OpInstall:
		return release.StatusPendingInstall
	case release.OpRollback:
		return release.StatusPendingRollback
	}
	return release.StatusPendingUpgrade
}

// eventHooks returns the hooks of rel for event, in the order they run, each with its identity as
// the API server sees it; none when skip.
func eventHooks(c Cluster, rel *release.Release, event resource.HookEvent, skip bool) (hookStep, error) {
	h := hookStep{event: event}
	if skip || rel == nil {
		return h, nil
	}
	_, plain, err := hooksOf(rel)
	if err != nil {
		return h, err
	}
	for _, hk := range resource.HooksFor(plain, event) {
		if obj := hk.Object.DeepCopy(); c.Normalize(obj, rel.Namespace) == nil {
			hk.Identity = resource.IdentityOf(obj)
		}
		h.hooks = append(h.hooks, hk)
	}
	return h, nil
}

// lateIdentities are the objects whose kinds the release's CRDs define and the API server does not
// serve yet.
func (p *prepared) lateIdentities() []resource.Identity {
	var out []resource.Identity
	for _, obj := range p.objects {
		if p.pendingKinds[obj.GroupVersionKind().GroupKind()] {
			out = append(out, resource.IdentityOf(obj))
		}
	}
	return out
}

// runner runs the lifecycle's own steps of one operation.
type runner struct {
	d *operation
	// rel is the revision the operation records; for an uninstall, the release's last revision.
	rel *release.Release
	// objects are the desired objects by identity (install, upgrade, rollback).
	objects map[resource.Identity]*unstructured.Unstructured
	// success is the description of the deployed revision, of the uninstalled one, or of the
	// failed one.
	success    string
	historyMax int
	// created says the pending record was written by this run.
	created bool
}

// RunStep runs a record, hooks, adopt or validate step.
func (r *runner) RunStep(ctx context.Context, step plan.Step) error {
	switch step.Action {
	case plan.Record:
		return r.record(ctx, step)
	case plan.RunHooks:
		return r.d.hooks(ctx, r.rel, resource.HookEvent(step.Hook))
	case plan.Adopt:
		return r.eachObject(ctx, step, func(ctx context.Context, obj *unstructured.Unstructured) error {
			return r.d.Cluster.AdoptFields(ctx, resource.IdentityOf(obj))
		})
	case plan.Validate:
		err := r.eachObject(ctx, step, func(ctx context.Context, obj *unstructured.Unstructured) error {
			_, err := r.d.Cluster.Apply(ctx, obj, cluster.ApplyOptions{DryRun: true})
			if cluster.IsUnknownKind(err) {
				return nil // defined by a CRD not installed yet: its apply will say so
			}
			return err
		})
		if err != nil {
			return &ValidationError{Late: true, Err: err}
		}
		return nil
	}
	return fmt.Errorf("%s: not a lifecycle step", step.Action)
}

// eachObject runs fn for the desired object of each identity of step, concurrently.
func (r *runner) eachObject(ctx context.Context, step plan.Step, fn func(context.Context, *unstructured.Unstructured) error) error {
	objs := make([]*unstructured.Unstructured, 0, len(step.Objects))
	for _, id := range step.Objects {
		obj, ok := r.objects[id]
		if !ok {
			return fmt.Errorf("%s: not among the desired objects", id)
		}
		objs = append(objs, obj)
	}
	return forEach(ctx, objs, fn)
}

// record writes what a Record step records, once the lease is confirmed as the operation's
// (operation.guard): the records are what an operation that took the release over goes by.
func (r *runner) record(ctx context.Context, step plan.Step) error {
	d, rel := r.d, r.rel
	if err := d.guard(ctx); err != nil {
		return err
	}
	switch s := release.Status(step.Status); s {
	case release.StatusPendingInstall, release.StatusPendingUpgrade, release.StatusPendingRollback:
		if r.historyMax > 0 {
			// Make room for the new revision, as Helm does.
			if _, err := d.Store.Prune(ctx, rel.Name, r.historyMax-1); err != nil {
				return &RecordError{Release: rel.Name, Revision: rel.Version, Status: s, Err: err}
			}
		}
		err := d.Store.Create(ctx, rel)
		if errors.Is(err, release.ErrExists) {
			// Recorded by the run that was interrupted before its journal said so.
			if got, gerr := d.Store.Get(ctx, rel.Name, rel.Version); gerr == nil && got.Info.Status == s {
				err = nil
			}
		}
		if err != nil {
			return &RecordError{Release: rel.Name, Revision: rel.Version, Status: s, Err: err}
		}
		r.created = true
		return nil
	case release.StatusDeployed:
		for _, v := range step.Supersedes {
			prev, err := d.Store.Get(ctx, rel.Name, v)
			if errors.Is(err, release.ErrNotFound) {
				continue // pruned, or removed by hand: nothing to mark
			}
			if err == nil && prev.Info.Status == release.StatusDeployed {
				prev.Info.Status = release.StatusSuperseded
				err = d.Store.Update(ctx, prev)
			}
			if err != nil {
				return &RecordError{Release: rel.Name, Revision: v, Status: release.StatusSuperseded, Err: err}
			}
		}
		rel.Info.Status = release.StatusDeployed
		rel.Info.Description = r.success
		if err := d.Store.Update(ctx, rel); err != nil {
			return &RecordError{Release: rel.Name, Revision: rel.Version, Status: s, Err: err}
		}
		return nil
	case release.StatusFailed:
		rel.Info.Status = release.StatusFailed
		rel.Info.Description = r.success
		if err := d.Store.Update(ctx, rel); err != nil {
			return &RecordError{Release: rel.Name, Revision: rel.Version, Status: s, Err: err}
		}
		return nil
	case release.StatusUninstalling:
		rel.Info.Status = release.StatusUninstalling
		rel.Info.Description = "Deletion in progress (or silently failed)"
		if err := d.Store.Update(ctx, rel); err != nil {
			return &RecordError{Release: rel.Name, Revision: rel.Version, Status: s, Err: err}
		}
		return nil
	case release.StatusUninstalled:
		rel.Info.Status = release.StatusUninstalled
		rel.Info.Deleted = d.now()
		rel.Info.Description = cmp.Or(r.success, "Uninstallation complete")
		if err := d.Store.Update(ctx, rel); err != nil {
			return &RecordError{Release: rel.Name, Revision: rel.Version, Status: s, Err: err}
		}
		return nil
	case statusPurged:
		return d.purge(ctx, rel.Name)
	}
	return fmt.Errorf("record: unknown status %q", step.Status)
}

// RecordError says a release's record could not be written.
type RecordError struct {
	Release  string
	Revision int
	Status   release.Status
	Err      error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("record release %s revision %d as %s: %v", e.Release, e.Revision, e.Status, e.Err)
}
func (e *RecordError) Unwrap() error { return e.Err }

// ValidationError says the API server refused objects in a server-side dry run: nothing was
// changed (Late: custom resources of the release's own CRDs, validated once those were
// Established; none of them was applied).
type ValidationError struct {
	Late bool
	Err  error
}

func (e *ValidationError) Error() string {
	if e.Late {
		return fmt.Sprintf("validation of the custom resources failed, none of them was applied:\n%v", e.Err)
	}
	return fmt.Sprintf("validation failed, nothing was changed:\n%v", e.Err)
}
func (e *ValidationError) Unwrap() error { return e.Err }

// execute runs the operation's plan for revision through the engine, journaled, with steps
// running the lifecycle's own steps, and adds what it did to the operation's runs.
func (d *operation) execute(ctx context.Context, op release.Operation, revision int, pl *plan.Plan, steps engine.StepRunner, opts engine.Options) (*engine.Result, error) {
	opts.Steps = steps
	if d != nil {
		opts.Journal = d
	}
	res, err := engine.Execute(ctx, d.Cluster, pl, opts)
	if res != nil {
		run := Run{Operation: op, Revision: revision, Plan: pl, Steps: res.Steps}
		for id, c := range res.Changes {
			run.Objects = append(run.Objects, ObjectRun{Object: id, Change: c, Took: res.Took[id]})
		}
		slices.SortFunc(run.Objects, func(a, b ObjectRun) int { return resource.Compare(a.Object, b.Object) })
		d.runs.add(run)
	}
	return res, err
}

// revisionPlan builds the object steps from in and wraps them per pol, with rel's hooks of pre
// and post (none with noHooks).
func (d *operation) revisionPlan(in plan.Input, pol revisionPolicy, rel *release.Release, pre, post resource.HookEvent, noHooks bool) (*plan.Plan, error) {
	objects, err := plan.Build(in)
	if err != nil {
		return nil, err
	}
	if pol.pre, err = eventHooks(d.Cluster, rel, pre, noHooks); err != nil {
		return nil, err
	}
	if pol.post, err = eventHooks(d.Cluster, rel, post, noHooks); err != nil {
		return nil, err
	}
	return revisionPlan(objects, pol), nil
}

// identities returns the identity of each object.
func identities(objs []*unstructured.Unstructured) []resource.Identity {
	out := make([]resource.Identity, len(objs))
	for i, obj := range objs {
		out[i] = resource.IdentityOf(obj)
	}
	return out
}

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
	// Duration is how long the whole operation took.
	Duration time.Duration `json:"duration"`
}

// Run is one plan an operation executed, and what it did.
type Run struct {
	Operation release.Operation `json:"operation"`
	Revision  int               `json:"revision"`
	Plan      *plan.Plan        `json:"plan"`
	// Objects say what happened to each object applied or deleted, and how long it took.
	Objects []ObjectRun `json:"objects,omitempty"`
	// Steps are the steps that ran to success, with their durations (a step that failed ends
	// the list; steps an interrupted run completed are not in it).
	Steps []engine.StepRun `json:"steps,omitempty"`
}

// ObjectRun is what a run did to one object.
type ObjectRun struct {
	Object resource.Identity `json:"object"`
	Change engine.Change     `json:"change"`
	Took   time.Duration     `json:"took"`
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

// revisionOperation runs body, an install, upgrade or rollback of release name: a dry run at
// once under the operation's deadline; otherwise holding the release's lease, once an interrupted
// operation on the release is finished (body is told of it: nil when there was none). The body
// runs the preflight once its plan is known, before its first change.
func (d Deps) revisionOperation(ctx context.Context, op release.Operation, name string, w WaitOptions, dryRun DryRun,
	body func(context.Context, *operation, *Interrupted) (*release.Release, error)) (*Result, error) {
	start := d.now()
	var o *operation
	var rel *release.Release
	var err error
	switch {
	case dryRun != NoDryRun:
		o = d.dryRun(name)
		dctx, cancel := w.deadline(ctx)
		defer cancel()
		rel, err = body(dctx, o, nil)
	default:
		o = d.start(name)
		err = o.operate(ctx, w, func(ctx context.Context, d *operation) error {
			in, err := d.recoverFirst(ctx, name, op)
			if err != nil {
				return err
			}
			rel, err = body(ctx, d, in)
			return err
		})
	}
	return &Result{Release: rel, Runs: o.runs.all(), Plan: o.runs.planned, Duration: d.now().Sub(start)}, err
}
