package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
)

// finish carries an interrupted operation to its end.
func (o *operation) finish(ctx context.Context, in *Interrupted, g Grants) error {
	var jo release.JournalOptions
	if in.Journal != nil {
		jo = g.narrow(in.Operation, in.Journal.Options)
	} else {
		jo.Wait = in.Operation == release.OpUninstall
	}
	o.takeOver(in.Journal)
	switch {
	case in.Stale:
	case in.Incomplete > 0:
		if err := o.deleteIncomplete(ctx, in); err != nil {
			return err
		}
	case in.Operation == release.OpUninstall:
		opts := UninstallOptions{Name: in.Release, Cascade: cascadeOf(jo.Cascade), KeepHistory: jo.KeepHistory, NoHooks: jo.NoHooks,
			WaitOptions: WaitOptions{Wait: jo.Wait, WaitForJobs: jo.WaitForJobs, OrderIfDeclared: jo.Ordered}}
		if _, err := o.uninstall(ctx, opts); err != nil {
			return err
		}
	default:
		if err := o.resumeRevision(ctx, in, jo); err != nil {
			return err
		}
	}
	o.sweepParts(ctx, in.Journal)
	return o.end(ctx, true)
}

// sweepParts deletes, once the operation journal j records is finished or undone, the parts that
// the records of its revision, and of the revisions its last step supersedes, do not name: an
// update of one of those records stopped midway leaves them. It is a plan of one record step
// (sweepStep), run again in full if interrupted.
func (o *operation) sweepParts(ctx context.Context, j *release.Journal) {
	if j == nil {
		return
	}
	var superseded []int
	if j.Plan != nil && len(j.Plan.Steps) > 0 {
		if last := j.Plan.Steps[len(j.Plan.Steps)-1]; last.Action == plan.Record {
			superseded = last.Supersedes
		}
	}
	// What it cannot sweep is owned by its record object, and goes with it: nothing to report.
	_ = o.executeOnce(ctx, j.Operation, j.Revision, &plan.Plan{Steps: []plan.Step{sweepStep(j.Revision, superseded)}}, &runner{d: o})
}

// sweep deletes the parts of each revision of versions that its record does not name; what it
// cannot delete is owned by its record object, and goes with it.
func (o *operation) sweep(ctx context.Context, versions []int) {
	for _, v := range versions {
		_, _ = o.Store.SweepParts(ctx, o.name, v)
	}
}

// resumeRevision finishes an interrupted install, upgrade or rollback of the newest revision from
// its record, skipping what the journal records as done. jo are the journal's options as the
// caller grants them (Grants.narrow).
func (o *operation) resumeRevision(ctx context.Context, in *Interrupted, jo release.JournalOptions) error {
	_, err := o.carryOut(ctx, resumeOp{in: in, jo: jo})
	return err
}

// resumeOp is the finishing of an interrupted install, upgrade or rollback as the revision
// pipeline carries it out: its recorded revision as it is, with the plan its journal recorded
// (or, when Helm left it pending without one, planned from the record).
type resumeOp struct {
	in *Interrupted
	jo release.JournalOptions
}

// read reads the revisions the recorded one replaces: the deployed and the one before it.
func (op resumeOp) read(ctx context.Context, d *operation) (draft, policy, error) {
	in, jo := op.in, op.jo
	rel := in.Last
	dr := draft{name: rel.Name, namespace: rel.Namespace, number: rel.Version, recorded: rel}
	if dep, err := d.Store.Deployed(ctx, rel.Name); err == nil && dep.Version != rel.Version {
		dr.previous = append(dr.previous, dep)
	}
	if rel.Version > 1 {
		if prev, err := d.Store.Get(ctx, rel.Name, rel.Version-1); err == nil {
			dr.previous = append(dr.previous, prev)
		}
	}
	pol := policy{op: in.Operation,
		settings: settings{wait: WaitOptions{Wait: jo.Wait, WaitForJobs: jo.WaitForJobs, OrderIfDeclared: jo.Ordered},
			noHooks: jo.NoHooks, takeOwnership: jo.TakeOwnership},
		said: descriptions{failure: fmt.Sprintf("Finishing the interrupted %s of %q failed", in.Operation, rel.Name)},
	}
	switch in.Operation {
	case release.OpInstall:
		pol.said.success = "Install complete"
	case release.OpUpgrade:
		pol.said.success = "Upgrade complete"
	default:
		pol.said.success = fmt.Sprintf("Rollback to %d", rel.Info.RollbackRevision)
	}
	j := in.Journal
	if j != nil && pending(rel.Info.Status) && operationOf(rel.Info.Status) != j.Operation {
		return dr, pol, &JournalRefusedError{Release: rel.Name, Namespace: rel.Namespace, Operation: j.Operation, Revision: j.Revision,
			Reason: fmt.Sprintf("the record of revision %d is %s", rel.Version, rel.Info.Status)}
	}
	if j != nil && j.Plan != nil && j.Operation == in.Operation && j.Revision == rel.Version {
		dr.journal = j
	}
	return dr, pol, nil
}

// deleteIncomplete deletes the incomplete record an operation left (Interrupted.Incomplete), its
// parts with it. Nothing else of that operation had changed: finishing it and undoing it alike
// come to this.
func (o *operation) deleteIncomplete(ctx context.Context, in *Interrupted) error {
	return o.executeOnce(ctx, in.Operation, in.Incomplete, &plan.Plan{Steps: []plan.Step{deleteRecordStep(in.Incomplete)}}, &runner{d: o})
}

// deleteRecord deletes the incomplete record of revision (a deleteRecordStep), its parts with it;
// one already gone is deleted.
func (o *operation) deleteRecord(ctx context.Context, revision int) error {
	_, err := o.Store.Delete(ctx, o.name, revision)
	var incomplete *release.IncompleteRecordError
	if err == nil || errors.As(err, &incomplete) || errors.Is(err, release.ErrNotFound) {
		return nil
	}
	return &RecordError{Release: o.name, Revision: revision, Status: statusDeleted, Err: err}
}

// abandon undoes an interrupted operation: an install is uninstalled, an upgrade or a rollback
// rolled back to the deployed revision; an uninstall that deleted nothing yet is dropped, one that
// may have is finished, as deleted objects cannot be brought back.
func (o *operation) abandon(ctx context.Context, in *Interrupted, g Grants) error {
	var jo release.JournalOptions
	if in.Journal != nil {
		jo = g.narrow(in.Operation, in.Journal.Options)
	}
	switch {
	case in.Stale:
	case in.Incomplete > 0:
		if err := o.deleteIncomplete(ctx, in); err != nil {
			return err
		}
	case in.Operation == release.OpUninstall:
		if in.Last != nil && in.Last.Info.Status == release.StatusUninstalling {
			return o.finish(ctx, in, g)
		}
		if err := o.abandonHooks(ctx, in); err != nil {
			return err
		}
	case in.Operation == release.OpInstall:
		if err := o.abandonHooks(ctx, in); err != nil {
			return err
		}
		if _, err := o.uninstall(ctx, UninstallOptions{Name: in.Release, NoHooks: jo.NoHooks,
			WaitOptions: WaitOptions{Wait: true}}); err != nil {
			return err
		}
	default:
		if in.Deployed == 0 {
			return &NoDeployedError{Release: in.Release, Operation: in.Operation}
		}
		if err := o.abandonHooks(ctx, in); err != nil {
			return err
		}
		last := in.Last
		if err := o.recordFailure(ctx, in.Operation, last,
			fmt.Sprintf("%s interrupted; rolled back to %d by berth recover --rollback", in.Operation, in.Deployed)); err != nil {
			return err
		}
		if _, err := o.rollback(ctx, RollbackOptions{Name: in.Release, Namespace: last.Namespace, Version: in.Deployed,
			NoHooks: jo.NoHooks, WaitOptions: WaitOptions{Wait: jo.Wait, WaitForJobs: jo.WaitForJobs, OrderIfDeclared: jo.Ordered}}); err != nil {
			return err
		}
	}
	o.sweepParts(ctx, in.Journal)
	return o.end(ctx, true)
}

// abandonHooks removes the hook objects left by the interrupted operation's hook events that
// did not complete, as a plan of its own (see leftoverHooksPlan). It keeps no journal: run again,
// it deletes what is still there.
func (o *operation) abandonHooks(ctx context.Context, in *Interrupted) error {
	if in.Last == nil || in.Stale {
		return nil
	}
	pl, err := leftoverHooksPlan(o.Cluster, in)
	if err != nil || len(pl.Steps) == 0 {
		return err
	}
	return o.executeOnce(ctx, in.Operation, in.Last.Version, pl, &runner{d: o, rel: in.Last})
}

// RecoverOptions describe a recovery.
type RecoverOptions struct {
	Name string
	// Rollback undoes the interrupted operation instead of finishing it.
	Rollback bool
	// TakeOwnership and NoHooks grant what the interrupted operation's journal asks of them
	// (see Grants); without them, it is taken over no object and skips no hook.
	TakeOwnership, NoHooks bool
	WaitOptions
}

// RecoverResult is what a recovery found and did.
type RecoverResult struct {
	Name string `json:"name"`
	// Interrupted is the operation found unfinished; nil when there was none.
	Interrupted *Interrupted `json:"-"`
	// Action says what recovery did.
	Action string `json:"action"`
	// Release is the newest revision afterwards; nil when none is recorded.
	Release *release.Release `json:"-"`
	// Runs are the plans the recovery executed.
	Runs []Run `json:"runs,omitempty"`
}

// Recover finishes (or, with Rollback, undoes) the operation on a release that was interrupted:
// by its journal, or from the release's record alone when Helm left it pending.
func Recover(ctx context.Context, d Deps, o RecoverOptions) (*RecoverResult, error) {
	out := &RecoverResult{Name: o.Name}
	op := d.start(o.Name, ctx)
	defer func() { out.Runs = op.runs.all() }()
	err := op.operate(ctx, o.WaitOptions, func(ctx context.Context) error {
		s, err := op.readState(ctx, o.Name)
		if err != nil {
			return err
		}
		out.Interrupted = s.Interrupted
		if s.Interrupted == nil {
			if s.Last == nil {
				_, err := op.Store.Last(ctx, o.Name) // says the release is not found
				return err
			}
			out.Release = s.Last
			out.Action = fmt.Sprintf("nothing to recover: revision %d is %s", s.Last.Version, s.Last.Info.Status)
			return nil
		}
		out.Action = s.Interrupted.Next(o.Rollback)
		err = op.drive(ctx, Wanted{Rollback: o.Rollback, Grants: grantsOf(o.TakeOwnership, o.NoHooks, release.OpInstall, release.OpUpgrade, release.OpRollback, release.OpUninstall)}, nil)
		out.Release = s.Interrupted.latest(ctx, op.Deps)
		return err
	})
	return out, err
}

// NoDeployedError says an interrupted operation cannot be undone: the release has no deployed
// revision to roll back to; finishing it is the way on.
type NoDeployedError struct {
	Release   string
	Operation release.Operation
}

func (e *NoDeployedError) Error() string {
	return fmt.Sprintf("release %s has no deployed revision to roll back to", e.Release)
}
