package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
}

// UninstallResult is what an uninstall did.
type UninstallResult struct {
	Release *release.Release
	Deleted []resource.Identity
	// Kept are the objects left in place by helm.sh/resource-policy: keep.
	Kept []resource.Identity
}

// Uninstall deletes a release's objects in Helm's uninstall order, with UID preconditions, waits
// until they are gone, and removes the release's records (or marks them uninstalled with
// KeepHistory). Until it completes, the release stays recorded as uninstalling, and running it
// again goes on where it stopped.
func Uninstall(ctx context.Context, d Deps, o UninstallOptions) (*UninstallResult, error) {
	ctx, cancel := o.deadline(ctx)
	defer cancel()
	last, err := d.Store.Last(ctx, o.Name)
	if err != nil {
		return nil, err
	}
	if last.Info.Status == release.StatusUninstalled {
		if o.KeepHistory {
			return nil, fmt.Errorf("release %s is already uninstalled (revision %d)", o.Name, last.Version)
		}
		return &UninstallResult{Release: last}, d.purge(ctx, o.Name)
	}
	recorded, err := recordedObjects(d.Cluster, last)
	if err != nil {
		return nil, err
	}
	before, err := live(ctx, d.Cluster, recorded)
	if err != nil {
		return nil, err
	}
	// Nothing is deleted before every pre-delete hook completed; if one fails, the release stays
	// as it was.
	if err := d.runHooks(ctx, last, resource.HookPreDelete, o.NoHooks); err != nil {
		werr := d.Store.Update(context.WithoutCancel(ctx), last)
		return nil, errors.Join(fmt.Errorf("uninstall %s: %w; nothing was deleted", o.Name, err), werr)
	}
	last.Info.Status = release.StatusUninstalling
	last.Info.Description = "Deletion in progress (or silently failed)"
	if err := d.Store.Update(ctx, last); err != nil {
		return nil, fmt.Errorf("record release %s revision %d as uninstalling: %w", o.Name, last.Version, err)
	}
	pl, err := plan.Build(plan.Input{Recorded: recorded, Live: before, Wait: o.Wait})
	if err != nil {
		return nil, err
	}
	eo := d.engineOptions(nil, before, uids(before), o.WaitOptions)
	eo.Delete = cluster.DeleteOptions{Propagation: o.Cascade}
	res, err := engine.Execute(ctx, d.Cluster, pl, eo)
	out := &UninstallResult{Release: last, Kept: pl.Kept}
	if res != nil {
		for id, c := range res.Changes {
			if c == engine.Deleted || c == engine.Gone {
				out.Deleted = append(out.Deleted, id)
			}
		}
		slices.SortFunc(out.Deleted, func(a, b resource.Identity) int { return cmpIdentity(a, b) })
	}
	if err == nil {
		err = d.runHooks(ctx, last, resource.HookPostDelete, o.NoHooks)
	}
	if err != nil {
		werr := d.Store.Update(context.WithoutCancel(ctx), last)
		return out, errors.Join(fmt.Errorf("uninstall %s: %w; the release stays recorded as uninstalling, and berth uninstall %s goes on from here", o.Name, err, o.Name), werr)
	}
	if o.KeepHistory {
		last.Info.Status = release.StatusUninstalled
		last.Info.Deleted = d.now()
		last.Info.Description = "Uninstallation complete"
		return out, d.Store.Update(ctx, last)
	}
	return out, d.purge(ctx, o.Name)
}

// purge deletes every recorded revision of a release.
func (d Deps) purge(ctx context.Context, name string) error {
	history, err := d.Store.History(ctx, name)
	if err != nil {
		return err
	}
	for _, rel := range history {
		if _, err := d.Store.Delete(ctx, name, rel.Version); err != nil {
			return fmt.Errorf("delete the record of release %s revision %d: %w", name, rel.Version, err)
		}
	}
	return nil
}

func cmpIdentity(a, b resource.Identity) int {
	if a.Less(b) {
		return -1
	}
	if b.Less(a) {
		return 1
	}
	return 0
}
