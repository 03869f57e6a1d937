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

	// preview, when set with a server dry run, is filled with what the rollback would do.
	preview *Preview
}

// Rollback records a new revision with the chart, values and manifest of an earlier one and
// makes the cluster match it.
func Rollback(ctx context.Context, d Deps, o RollbackOptions) (*Result, error) {
	return d.revisionOperation(ctx, Wanted{Operation: release.OpRollback}, o.Name, o.WaitOptions, o.DryRun, func(ctx context.Context, d *operation, _ Action) (*release.Release, error) {
		return d.rollback(ctx, o)
	})
}

// rollback is Rollback within its operation (or its dry run).
func (d *operation) rollback(ctx context.Context, o RollbackOptions) (*release.Release, error) {
	last, err := d.Store.Last(ctx, o.Name)
	if err != nil {
		return nil, err
	}
	version := o.Version
	if version == 0 {
		version = last.Version - 1
	}
	if version < 1 {
		return nil, fmt.Errorf("release %s has no revision before %d to roll back to", o.Name, last.Version)
	}
	target, err := d.Store.Get(ctx, o.Name, version)
	if err != nil {
		return nil, err
	}
	deployed, _ := deployedOf(ctx, d.Store, last)

	objs, err := d.documents().Manifest(target.Manifest)
	if err != nil {
		return nil, fmt.Errorf("release %s revision %d: recorded manifest: %w", o.Name, version, err)
	}
	first := last.Info.FirstDeployed
	description := cmp.Or(o.Description, fmt.Sprintf("Rollback to %d", version))
	rel := &release.Release{
		Name: o.Name, Namespace: o.Namespace, Version: last.Version + 1, Labels: maps.Clone(target.Labels),
		ApplyMethod: release.ApplyMethod,
		Chart:       target.Chart, Config: target.Config, Manifest: target.Manifest, Hooks: copyHooks(target.Hooks),
		Info: &release.Info{FirstDeployed: first, LastDeployed: d.now(), Status: release.StatusPendingRollback,
			Description: description, RollbackRevision: version, Notes: target.Info.Notes},
	}
	if o.DryRun == ClientDryRun {
		return rel, nil
	}
	return rel, d.replace(ctx, replacement{
		rel: rel, op: release.OpRollback, previous: []*release.Release{deployed, last}, objects: objs,
		wait: o.WaitOptions, takeOwnership: o.TakeOwnership, dryRun: o.DryRun,
		noHooks: o.NoHooks,
		success: description, failure: fmt.Sprintf("Rollback %q failed", o.Name), dryRunDescription: o.Description,
		historyMax: o.HistoryMax, preview: o.preview, forceReplace: o.ForceReplace, cleanupOnFail: o.CleanupOnFail,
	})
}

// copyHooks copies hook records, so that recording a new run leaves the old revision's alone.
func copyHooks(hooks []*release.Hook) []*release.Hook {
	out := make([]*release.Hook, len(hooks))
	for i, h := range hooks {
		c := *h
		out[i] = &c
	}
	return out
}
