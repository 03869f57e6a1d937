package lifecycle

import (
	"cmp"
	"context"
	"fmt"
	"maps"

	"github.com/berthdev/berth/internal/release"
)

// RollbackOptions describe a rollback.
type RollbackOptions struct {
	Name      string
	Namespace string
	// Version is the revision to roll back to; 0 means the one before the last.
	Version int
	WaitOptions
	TakeOwnership bool
	NoHooks       bool
	DryRun        DryRun
	HistoryMax    int
	// ForceReplace deletes and creates again the objects whose changes the API server refuses
	// as immutable (see UpgradeOptions).
	ForceReplace bool
	// Description replaces "Rollback to N" as the new revision's description.
	Description string
	// CleanupOnFail deletes, when the rollback fails, the objects it created (see
	// UpgradeOptions).
	CleanupOnFail bool
	// AllowUnverified lets the rollback go back to a revision whose chart was not verified when
	// the release's last revision's was: without it, that is refused (UnverifiedRollbackError).
	AllowUnverified bool

	// preview, when set with a server dry run, is filled with what the rollback would do.
	preview *Preview
}

// Rollback records a new revision with the chart, values and manifest of an earlier one and
// makes the cluster match it.
func Rollback(ctx context.Context, d Deps, o RollbackOptions) (*Result, error) {
	// A watch window starts once the release is ready; a regression in it records the rollback's
	// revision failed, and nothing undoes a rollback.
	o.Wait = o.Wait || o.Watch.For > 0
	if err := o.checkWindow(o.CleanupOnFail); err != nil {
		return nil, err
	}
	return d.revisionOperation(ctx, Wanted{Operation: release.OpRollback, Grants: grantsOf(o.TakeOwnership, o.NoHooks, release.OpRollback)}, o.Name, o.WaitOptions, o.DryRun, func(ctx context.Context, op *operation, _ Action) (*release.Release, error) {
		return op.rollback(ctx, o)
	})
}

// rollback is Rollback within its operation (or its dry run): the revision pipeline with the
// contents of an earlier revision, replacing the deployed and the last revision.
func (o *operation) rollback(ctx context.Context, opts RollbackOptions) (*release.Release, error) {
	return o.carryOut(ctx, rollbackOp{opts})
}

// UnverifiedRollbackError refuses a rollback of a release whose last revision's chart was
// verified to a revision whose chart was not: it would run a chart nobody verified.
type UnverifiedRollbackError struct {
	Release string
	// Revision is the one the rollback goes back to; Last is the release's last, verified by
	// Provider.
	Revision, Last int
	Provider       string
}

func (e *UnverifiedRollbackError) Error() string {
	return fmt.Sprintf("release %s: revision %d's chart was not verified, and the last revision %d's was (%s): a rollback to it would run a chart nobody verified",
		e.Release, e.Revision, e.Last, e.Provider)
}

// checkVerified refuses a rollback from last to target when last's chart was verified and
// target's was not, unless allowed.
func checkVerified(last, target *release.Release, allowed bool) error {
	if allowed {
		return nil
	}
	proof, err := release.ProvenanceOf(last)
	if err != nil || proof == nil {
		return nil
	}
	if p, err := release.ProvenanceOf(target); err == nil && p != nil {
		return nil
	}
	return &UnverifiedRollbackError{Release: last.Name, Revision: target.Version, Last: last.Version, Provider: proof.Provider}
}

// rollbackOp is a rollback as the revision pipeline carries it out.
type rollbackOp struct{ o RollbackOptions }

// read reads the last revision and the one to go back to (by default, the one before the
// last), whose contents the next revision takes.
func (op rollbackOp) read(ctx context.Context, d *operation) (draft, policy, error) {
	o := op.o
	last, err := d.Store.Last(ctx, o.Name)
	if err != nil {
		return draft{}, policy{}, err
	}
	version := o.Version
	if version == 0 {
		version = last.Version - 1
	}
	if version < 1 {
		return draft{}, policy{}, fmt.Errorf("release %s has no revision before %d to roll back to", o.Name, last.Version)
	}
	target, err := d.Store.Get(ctx, o.Name, version)
	if err != nil {
		return draft{}, policy{}, err
	}
	if err := checkVerified(last, target, o.AllowUnverified); err != nil {
		return draft{}, policy{}, err
	}
	deployed, _ := deployedOf(ctx, d.Store, last)
	c, err := d.contentsOf(target)
	if err != nil {
		return draft{}, policy{}, err
	}
	description := cmp.Or(o.Description, fmt.Sprintf("Rollback to %d", version))
	dr := draft{name: o.Name, namespace: o.Namespace, number: last.Version + 1, contents: c, previous: []*release.Release{deployed, last},
		entry: entry{labels: maps.Clone(target.Labels), firstDeployed: last.Info.FirstDeployed, description: description, rollbackTo: version}}
	return dr, policy{op: release.OpRollback,
		settings: settings{wait: o.WaitOptions, dryRun: o.DryRun, noHooks: o.NoHooks, takeOwnership: o.TakeOwnership,
			forceReplace: o.ForceReplace, historyMax: o.HistoryMax, preview: o.preview},
		said: descriptions{success: description, failure: fmt.Sprintf("Rollback %q failed", o.Name), dryRun: o.Description},
		// As Helm's rollback: what it created is deleted only when applying fails.
		undo: undo{cleanupOnFail: o.CleanupOnFail, onlyApplying: true},
	}, nil
}
