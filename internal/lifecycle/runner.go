package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// runner runs the lifecycle's own steps of one operation.
type runner struct {
	d *operation
	// rel is the revision the operation records; for an uninstall, the release's last revision.
	rel *release.Release
	// objects are the records of the operation's objects, of which the steps read the desired
	// ones (install, upgrade, rollback).
	objects *plan.Objects
	// success is the description of the deployed revision, of the uninstalled one, or of the
	// failed one; failure says what failed, should the run fail.
	success, failure string
	historyMax       int
	// created says the pending record was written by this run.
	created bool
	// readiness are the rules a watch step judges its objects by.
	readiness readiness.Options
}

// RunStep runs a record, hooks, watch, adopt, validate or namespace step.
func (r *runner) RunStep(ctx context.Context, step plan.Step) error {
	switch step.Action {
	case plan.Record:
		return r.record(ctx, step)
	case plan.RunHooks:
		return r.d.hooks(ctx, r.rel, resource.HookEvent(step.Hook))
	case plan.Watch:
		return r.watch(ctx, step)
	case plan.RemoveHooks:
		return r.d.removeLeftoverHooks(ctx, r.rel, resource.HookEvent(step.Hook), true)
	case plan.CreateNamespace, plan.DeleteNamespace:
		var errs []error
		for _, id := range step.Objects {
			if step.Action == plan.CreateNamespace {
				errs = append(errs, r.d.Namespaces.Create(ctx, id.Name))
			} else {
				errs = append(errs, r.d.Namespaces.Delete(ctx, id.Name))
			}
		}
		return errors.Join(errs...)
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

// watch runs a watch step: the cluster's window over the step's objects, for what is left of it
// since it started (the journal's WatchStarted; all of it when the journal does not say). When
// nothing is left (the operation stopped in the window and is finished after it ended), the
// window judges once from what it sees.
func (r *runner) watch(ctx context.Context, step plan.Step) error {
	w := step.Window
	if w == nil {
		return fmt.Errorf("%s: a watch step without a window", step.ID)
	}
	started, resumed := r.d.watchStarted()
	left := w.Left(started, r.d.now())
	if !started.IsZero() {
		// A window this run started began as the step before it ended, a moment ago: only one
		// an earlier run started is told of.
		if resumed {
			r.d.notify(fmt.Sprintf("the watch window of revision %d started at %s: %s of its %s left",
				r.rel.Version, started.Format(time.RFC3339), left.Round(time.Second), w.For))
		}
	}
	emit := r.d.emitter()
	progress := func(id resource.Identity, res readiness.Result) {
		emit(engine.Event{Type: engine.ObjectProgress, Step: step.ID, Object: id, State: res.State, Message: res.Message})
	}
	return r.d.Cluster.WatchWindow(ctx, step.Objects,
		cluster.WindowOptions{For: left, Tolerance: w.Tolerance, Restarts: w.Restarts, Readiness: r.readiness}, progress)
}

// eachObject runs fn for the desired object of each identity of step, concurrently.
func (r *runner) eachObject(ctx context.Context, step plan.Step, fn func(context.Context, *unstructured.Unstructured) error) error {
	objs := make([]*unstructured.Unstructured, 0, len(step.Objects))
	for _, id := range step.Objects {
		f := r.objects.Get(id)
		if f == nil || f.Desired == nil {
			return fmt.Errorf("%s: not among the desired objects", id)
		}
		objs = append(objs, f.Desired)
	}
	return forEach(ctx, objs, fn)
}

// record writes what a Record step records, once the lease is confirmed as the operation's
// (operation.guard): the records are what an operation that took the release over goes by.
// deployed is the record of the runner's revision as the step that records it deployed writes it.
func (r *runner) deployed() *release.Release {
	rel, info := *r.rel, *r.rel.Info
	info.Status, info.Description = release.StatusDeployed, r.success
	rel.Info = &info
	return &rel
}

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
		d.journalBeside(ctx, step.ID)
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
		// The record that says the revision is deployed is encoded while its objects are applied.
		d.Store.EncodeAhead(r.deployed())
		return nil
	case release.StatusDeployed:
		var superseded []*release.Release
		for _, v := range step.Supersedes {
			prev, err := d.Store.Get(ctx, rel.Name, v)
			if errors.Is(err, release.ErrNotFound) {
				continue // pruned, or removed by hand: nothing to mark
			}
			if err != nil {
				return &RecordError{Release: rel.Name, Revision: v, Status: release.StatusSuperseded, Err: err}
			}
			if prev.Info.Status == release.StatusDeployed {
				prev.Info.Status = release.StatusSuperseded
				superseded = append(superseded, prev)
			}
		}
		rel.Info.Status = release.StatusDeployed
		rel.Info.Description = r.success
		// Each record is encoded beside the others, and they are written one after the other:
		// the superseded revisions first, so that a kill in between leaves no two deployed.
		for _, prev := range superseded {
			d.Store.EncodeAhead(prev)
		}
		for _, prev := range superseded {
			if err := d.Store.Update(ctx, prev); err != nil {
				return &RecordError{Release: rel.Name, Revision: prev.Version, Status: release.StatusSuperseded, Err: err}
			}
		}
		if err := d.Store.Update(ctx, rel); err != nil {
			return &RecordError{Release: rel.Name, Revision: rel.Version, Status: s, Err: err}
		}
		return nil
	case release.StatusSuperseded:
		// The uninstalled revision whose name an install took (replace), as Helm marks it.
		prev, err := d.Store.Get(ctx, rel.Name, step.Revision)
		if err == nil && prev.Info.Status != release.StatusSuperseded {
			prev.Info.Status = release.StatusSuperseded
			prev.Info.Description = "superseded by new release"
			err = d.Store.Update(ctx, prev)
		}
		if err != nil {
			return &RecordError{Release: rel.Name, Revision: step.Revision, Status: s, Err: err}
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
	case statusDeleted:
		return d.deleteRecord(ctx, step.Revision)
	case statusSwept:
		d.sweep(ctx, append([]int{step.Revision}, step.Supersedes...))
		return nil
	case statusStopped:
		if err := d.Store.Update(ctx, rel); err != nil {
			return &RecordError{Release: rel.Name, Revision: rel.Version, Status: rel.Info.Status, Err: err}
		}
		return nil
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

// purge deletes every recorded revision of a release. A record already gone (deleted with its
// namespace, say) is as good as deleted.
func (o *operation) purge(ctx context.Context, name string) error {
	_, err := o.Store.Purge(ctx, name)
	return err
}
