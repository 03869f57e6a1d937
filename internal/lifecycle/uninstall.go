package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// UninstallOptions describe an uninstall.
type UninstallOptions struct {
	Name string
	// WaitOptions: Wait makes uninstall return only once every deleted object, by UID, is gone.
	WaitOptions
	// Cascade is the deletion propagation: foreground (default), background or orphan.
	Cascade     metav1.DeletionPropagation
	KeepHistory bool
	NoHooks     bool
	// SkipHooksInTerminatingNamespace goes on when the release's namespace is being deleted and
	// the API server refuses to create a hook there: the hook is skipped and reported in
	// SkippedHooks. The uninstall then also goes on without the lease and the journal it could
	// not create there.
	SkipHooksInTerminatingNamespace bool
	// DryRun shows the plan and runs every deletion through the API server's dry run (admission
	// webhooks included), changing nothing.
	DryRun bool
	// Description replaces "Uninstallation complete" on the record KeepHistory keeps.
	Description string
	// LeftBehind says the asker found what an operation left behind on a release with no
	// revision recorded (LeftBehind, State.LeftBehind): the uninstall removes it, and finding no
	// record to uninstall then is its success, not ErrNotFound.
	LeftBehind bool
}

// UninstallResult is what an uninstall did, or for a dry run would do.
type UninstallResult struct {
	Release *release.Release    `json:"-"`
	Name    string              `json:"name"`
	DryRun  bool                `json:"dryRun,omitempty"`
	Plan    *plan.Plan          `json:"plan,omitempty"`
	Deleted []resource.Identity `json:"deleted,omitempty"`
	// Kept are the objects left in place by helm.sh/resource-policy: keep.
	Kept []resource.Identity `json:"kept,omitempty"`
	// Blockers say why objects could not be removed; Left are the release's objects (and their
	// dependents) still in the cluster when the uninstall stopped.
	Blockers []cluster.Blocker   `json:"blockers,omitempty"`
	Left     []resource.Identity `json:"left,omitempty"`
	// Runs are the plans the uninstall executed: an interrupted operation's it finished first,
	// and its own.
	Runs []Run `json:"runs,omitempty"`
	// SkippedHooks are the hooks that could not be created because the release's namespace is
	// being deleted (SkipHooksInTerminatingNamespace).
	SkippedHooks []SkippedHook `json:"skippedHooks,omitempty"`
	// NoJournal says the release's namespace, being deleted, refused the uninstall's journal
	// (SkipHooksInTerminatingNamespace): it went on without one, and an uninstall stopped in it
	// is finished from the release's record alone.
	NoJournal bool `json:"noJournal,omitempty"`
}

// Uninstall deletes a release's objects in Helm's uninstall order, with UID preconditions, waits
// until they are gone, and removes the release's records (or marks them uninstalled with
// KeepHistory). Until it completes, the release stays recorded as uninstalling, and running it
// again goes on where it stopped.
func Uninstall(ctx context.Context, d Deps, o UninstallOptions) (*UninstallResult, error) {
	if o.DryRun {
		ctx, cancel := o.deadline(ctx)
		defer cancel()
		return d.dryRun(o.Name).uninstall(ctx, o)
	}
	var res *UninstallResult
	op := d.start(o.Name, ctx)
	if o.SkipHooksInTerminatingNamespace {
		op.terminating = &terminating{}
	}
	defer func() {
		if res != nil {
			res.Runs = op.runs.all()
			if op.terminating != nil {
				res.SkippedHooks = op.terminating.hooks()
				res.NoJournal = op.terminating.journalDropped()
			}
		}
	}()
	err := op.operate(ctx, o.WaitOptions, func(ctx context.Context) error {
		return op.drive(ctx, Wanted{Operation: release.OpUninstall, Grants: grantsOf(false, o.NoHooks, release.OpUninstall)}, func(ctx context.Context, _ Action, s State) error {
			if in := s.Interrupted; in != nil && in.Operation == release.OpUninstall && in.Last == nil {
				res = &UninstallResult{Name: o.Name} // the interrupted uninstall had removed every record
				return nil
			}
			// With no operation interrupted, nothing was written since the state was read: its
			// newest record is the one to uninstall, not decoded a second time.
			var last *release.Release
			if s.Interrupted == nil {
				last = s.Last
			}
			var err error
			res, err = op.uninstallLast(ctx, o, last)
			if o.LeftBehind && errors.Is(err, release.ErrNotFound) {
				// What was left behind went with the lease this uninstall took over, or the
				// interrupted operation it finished: no record was left to uninstall.
				res, err = &UninstallResult{Name: o.Name}, nil
			}
			return err
		})
	})
	return res, err
}

// uninstall is Uninstall within its operation (or its dry run).
func (o *operation) uninstall(ctx context.Context, opts UninstallOptions) (*UninstallResult, error) {
	return o.uninstallLast(ctx, opts, nil)
}

// uninstallLast is uninstall of the release whose newest record is last, read when nil.
func (o *operation) uninstallLast(ctx context.Context, opts UninstallOptions, last *release.Release) (*UninstallResult, error) {
	if last == nil {
		var err error
		if last, err = o.Store.Last(ctx, opts.Name); err != nil {
			return nil, err
		}
	}
	if last.Info.Status == release.StatusUninstalled {
		if opts.KeepHistory {
			return nil, fmt.Errorf("release %s is already uninstalled (revision %d)", opts.Name, last.Version)
		}
		// Uninstalled with its history kept: what is left is to delete the records.
		pl := &plan.Plan{Steps: []plan.Step{purgeStep()}}
		out := &UninstallResult{Release: last, Name: opts.Name, Plan: pl, DryRun: opts.DryRun}
		if opts.DryRun {
			return out, nil
		}
		return out, o.executeOnce(ctx, release.OpUninstall, last.Version, pl, &runner{d: o, rel: last})
	}
	// An uninstall parses each recorded manifest once: it keeps no copy of the objects to parse
	// them again, which would double what the largest part of its memory holds.
	recorded, err := o.recordedObjectsOf(nil, last)
	if err != nil {
		return nil, err
	}
	if deployed, derr := deployedOf(ctx, o.Store, last); derr == nil && deployed.Version != last.Version {
		// A failed upgrade may have left the deployed revision's objects alone: remove them too.
		objs, err := o.recordedObjectsOf(nil, deployed)
		if err != nil {
			return nil, err
		}
		recorded = union(recorded, objs)
	}
	if !opts.DryRun {
		// The preflight's reads are answered while the live objects are read.
		o.preflightAhead(ctx, release.OpUninstall)
	}
	before, err := live(ctx, o.Cluster, recorded)
	if err != nil {
		return nil, err
	}
	for _, obj := range before {
		// Most of what an object's metadata holds; an uninstall, which only deletes, never
		// reads them.
		obj.SetManagedFields(nil)
	}
	pl, err := o.planUninstall(last, recorded, before, opts)
	if err != nil {
		return nil, err
	}
	out := &UninstallResult{Release: last, Name: opts.Name, Plan: pl, Kept: pl.Kept}
	if opts.DryRun {
		out.DryRun = true
		return out, o.dryRunDeletes(ctx, pl, before, opts.Cascade, out)
	}
	var facts plan.Objects
	facts.Record(recorded)
	facts.Survey(before, nil)
	facts.Planned(pl)
	if err := o.preflight(ctx, release.OpUninstall, last, pl, &facts); err != nil {
		return nil, err
	}
	jo := journalOptions(opts.WaitOptions, opts.NoHooks, false)
	jo.KeepHistory, jo.Cascade = opts.KeepHistory, string(opts.Cascade)
	if pl, err = o.begin(ctx, release.OpUninstall, last.Version, pl, jo); err != nil {
		return nil, err
	}
	eo := o.engineOptions(&facts, opts.WaitOptions)
	eo.Delete = cluster.DeleteOptions{Propagation: opts.Cascade}
	res, err := o.execute(ctx, release.OpUninstall, last.Version, pl, &runner{d: o, rel: last, success: opts.Description}, eo)
	if res != nil {
		for _, e := range res.Changes.Entries {
			if e.Change == engine.Deleted || e.Change == engine.Gone {
				out.Deleted = append(out.Deleted, e.Object)
			}
		}
		slices.SortFunc(out.Deleted, resource.Compare)
	}
	if err == nil {
		return out, nil
	}
	o.failing()
	wctx, cancel := o.writeContext(ctx)
	defer cancel()
	ue := &UninstallError{Release: opts.Name, Err: err}
	var se *engine.StepError
	if errors.As(err, &se) && se.Step == "hooks/"+string(resource.HookPreDelete) {
		// Nothing is deleted before every pre-delete hook completed; if one fails, the release
		// stays as it was, with the hooks' runs recorded.
		ue.NothingDeleted = true
	} else {
		o.leftBehind(wctx, recorded, err, out)
	}
	if o.stopped() {
		return out, ue
	}
	if ue.Lost = o.guard(wctx); ue.Lost != nil {
		return out, ue
	}
	if werr := o.recordAfter(wctx, release.OpUninstall, last.Version, stoppedStep(last), &runner{d: o, rel: last}); werr != nil {
		ue.RecordErr = werr
	}
	return out, ue
}

// planUninstall is the plan of uninstalling revision last, whose recorded objects are recorded
// and those of them that exist before: the journalled one of the interrupted uninstall being
// finished, as it was recorded, or a new one.
func (o *operation) planUninstall(last *release.Release, recorded []*unstructured.Unstructured,
	before map[resource.Identity]*unstructured.Unstructured, opts UninstallOptions) (*plan.Plan, error) {
	if r := o.resume; r != nil && r.Operation == release.OpUninstall && r.Revision == last.Version && r.Plan != nil {
		// The journal is input: its plan deletes only what the record holds, and skips the
		// hooks only when opts does.
		scope, err := scopeOf(o.Cluster, release.OpUninstall, last, recorded, nil)
		if err != nil {
			return nil, err
		}
		if err := checkJournal(r, scope, journalOptions(opts.WaitOptions, opts.NoHooks, false)); err != nil {
			return nil, err
		}
		return r.Plan, nil
	}
	order, err := o.batches(last, opts.WaitOptions)
	if err != nil {
		return nil, err
	}
	objects, err := plan.Build(plan.Input{Recorded: recorded, Live: before, Wait: opts.Wait, Batches: order})
	if err != nil {
		return nil, err
	}
	pol := uninstallPolicy{revision: last.Version, keepHistory: opts.KeepHistory}
	if pol.pre, err = eventHooks(o.Cluster, last, resource.HookPreDelete, opts.NoHooks); err != nil {
		return nil, err
	}
	if pol.post, err = eventHooks(o.Cluster, last, resource.HookPostDelete, opts.NoHooks); err != nil {
		return nil, err
	}
	return uninstallPlan(objects, pol), nil
}

// UninstallError says an uninstall stopped. With NothingDeleted a pre-delete hook failed and the
// release is as it was; otherwise it stays recorded as uninstalling, and uninstalling it again
// goes on from where it stopped.
type UninstallError struct {
	Release        string
	NothingDeleted bool
	Err            error
	// RecordErr says the release's record could not be written.
	RecordErr error
	// Lost says the uninstall lost the release to another (release.ErrLost), or could not
	// confirm it still held it, before it recorded how far it got: it wrote nothing more.
	Lost error
}

func (e *UninstallError) Error() string {
	var s string
	if e.NothingDeleted {
		s = fmt.Sprintf("uninstall %s: %v; nothing was deleted", e.Release, e.Err)
	} else {
		s = fmt.Sprintf("uninstall %s: %v\nthe release stays recorded as uninstalling", e.Release, e.Err)
	}
	for _, err := range []error{e.RecordErr, e.Lost} {
		if err != nil {
			s += "\n" + err.Error()
		}
	}
	return s
}

func (e *UninstallError) Unwrap() []error {
	out := []error{e.Err}
	for _, err := range []error{e.RecordErr, e.Lost} {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// leftBehind fills in what an uninstall that stopped leaves: the blockers it met, and the
// release's objects (and the dependents the blockers name) that still exist.
func (o *operation) leftBehind(ctx context.Context, recorded []*unstructured.Unstructured, err error, out *UninstallResult) {
	var be *engine.BlockedError
	if errors.As(err, &be) {
		out.Blockers = be.Blockers
	}
	still, _ := live(ctx, o.Cluster, recorded)
	seen := map[resource.Identity]bool{}
	add := func(id resource.Identity) {
		if !seen[id] {
			seen[id] = true
			out.Left = append(out.Left, id)
		}
	}
	for id := range still {
		if !slices.Contains(out.Kept, id) {
			add(id)
			for _, dep := range o.Cluster.Dependents(ctx, id) {
				add(dep.Object)
			}
		}
	}
	slices.SortFunc(out.Left, resource.Compare)
}

// dryRunDeletes runs every deletion of the plan through the API server's dry run, so that a webhook
// or a missing permission that would block the uninstall is found before anything is deleted.
func (o *operation) dryRunDeletes(ctx context.Context, pl *plan.Plan, before map[resource.Identity]*unstructured.Unstructured,
	prop metav1.DeletionPropagation, out *UninstallResult) error {
	var blockers []cluster.Blocker
	for _, step := range pl.Steps {
		if step.Action != plan.Delete {
			continue
		}
		for _, id := range step.Objects {
			var uid types.UID
			if l := before[id]; l != nil {
				uid = l.GetUID()
			}
			_, err := o.Cluster.Delete(ctx, id, uid, cluster.DeleteOptions{Propagation: prop, DryRun: true})
			if err != nil {
				blockers = append(blockers, o.Cluster.Diagnose(ctx, id, "DELETE", err))
			}
		}
	}
	if len(blockers) == 0 {
		return nil
	}
	out.Blockers = blockers
	return &engine.BlockedError{Step: "dry-run", Blockers: blockers}
}
