package lifecycle

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/par"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// Preview is what an operation would do. It comes from the operation's own preparation run as a
// server-side dry run (the same code, stopped before its first change), so it is the plan the
// operation would execute.
type Preview struct {
	Operation release.Operation
	// Release is the revision the operation would record; for an uninstall, the revision whose
	// objects it would delete.
	Release *release.Release
	// Superseded are the revisions the new one would mark superseded.
	Superseded []int
	// KeepHistory: the uninstall would keep the release's records, marked uninstalled.
	KeepHistory bool
	Plan        *plan.Plan
	// Objects are the records of the preview's objects: each as the operation would apply it,
	// normalized and owned by the release (Desired); as it is in the cluster now, whole, for the
	// objects of the plan and the kept ones (Live); as the API server's dry run of berth's apply
	// returned it (Applied: none for objects whose kind a CRD of the release defines, not served
	// yet, which could not be dry-run); and whether berth first takes over the fields Helm set of
	// it (Adopted).
	Objects plan.Objects
	// Hooks are the hooks that would run, in order.
	Hooks []PreviewHook
}

// Object returns the record of the object of id as the preview has it (Objects); the record of
// an object the preview knows nothing of has its identity alone.
func (pv *Preview) Object(id resource.Identity) plan.Object {
	if f := pv.Objects.Get(id); f != nil {
		return *f
	}
	return plan.Object{ID: id}
}

// PreviewHook is a hook that an operation would run at Event.
type PreviewHook struct {
	Event resource.HookEvent
	resource.Hook
}

// PreviewInstall returns what Install would do with o, changing nothing.
func PreviewInstall(ctx context.Context, d Deps, o InstallOptions) (*Preview, error) {
	o.DryRun, o.preview = ServerDryRun, &Preview{}
	_, err := Install(ctx, d, o)
	return o.preview.result(err)
}

// PreviewUpgrade returns what Upgrade would do with o, changing nothing.
func PreviewUpgrade(ctx context.Context, d Deps, o UpgradeOptions) (*Preview, error) {
	o.DryRun, o.preview = ServerDryRun, &Preview{}
	_, err := Upgrade(ctx, d, o)
	return o.preview.result(err)
}

// PreviewRollback returns what Rollback would do with o, changing nothing.
func PreviewRollback(ctx context.Context, d Deps, o RollbackOptions) (*Preview, error) {
	o.DryRun, o.preview = ServerDryRun, &Preview{}
	_, err := Rollback(ctx, d, o)
	return o.preview.result(err)
}

// PreviewUninstall returns what Uninstall would do with o, changing nothing. Every deletion goes
// through the API server's dry run; a deletion that would be blocked is the error, with the
// preview.
func PreviewUninstall(ctx context.Context, d Deps, o UninstallOptions) (*Preview, error) {
	o.DryRun = true
	res, err := Uninstall(ctx, d, o)
	if res == nil {
		return nil, err
	}
	pv := &Preview{KeepHistory: o.KeepHistory}
	ferr := pv.fill(ctx, d.Cluster, previewInput{
		op: release.OpUninstall, rel: res.Release, plan: res.Plan,
		pre: resource.HookPreDelete, post: resource.HookPostDelete, noHooks: o.NoHooks,
	})
	return pv, errors.Join(err, ferr)
}

func (pv *Preview) result(err error) (*Preview, error) {
	if err != nil {
		return nil, err
	}
	return pv, nil
}

// previewInput is what an operation knows once it has prepared, before its first change.
type previewInput struct {
	op       release.Operation
	rel      *release.Release
	previous []*release.Release
	plan     *plan.Plan
	// facts are the records of the operation's objects, with the live objects' metadata as
	// surveyed; nil reads every object of the plan.
	facts     *plan.Objects
	pre, post resource.HookEvent
	noHooks   bool
}

// fill completes the preview (when there is one) with what an operation prepared, and reads the
// live objects whole.
func (pv *Preview) fill(ctx context.Context, c Cluster, in previewInput) error {
	if pv == nil {
		return nil
	}
	pv.Operation, pv.Release, pv.Plan = in.op, in.rel, in.plan
	if pv.Plan == nil {
		pv.Plan = &plan.Plan{}
	}
	// The operation's records, but for the live objects: the survey's are read again, whole.
	pv.Objects = plan.Objects{}
	for _, f := range in.facts.All() {
		g := *f
		g.Live = nil
		*pv.Objects.At(f.ID) = g
	}
	for _, step := range pv.Plan.Steps {
		if step.Action == plan.Adopt {
			for _, id := range step.Objects {
				pv.Objects.At(id).Adopted = true // as the operation would
			}
		}
	}
	for _, prev := range in.previous {
		if prev != nil && prev.Info.Status == release.StatusDeployed && !slices.Contains(pv.Superseded, prev.Version) {
			pv.Superseded = append(pv.Superseded, prev.Version)
		}
	}
	if !in.noHooks && in.rel != nil {
		_, hooks, err := hooksOf(in.rel)
		if err != nil {
			return err
		}
		for _, event := range []resource.HookEvent{in.pre, in.post} {
			for _, h := range resource.HooksFor(hooks, event) {
				// The hook's namespace as the API server will see it.
				if obj := h.Object.DeepCopy(); c.Normalize(obj, in.rel.Namespace) == nil {
					h.Identity = resource.IdentityOf(obj)
				}
				pv.Hooks = append(pv.Hooks, PreviewHook{Event: event, Hook: h})
			}
		}
	}
	ids := slices.Clone(pv.Plan.Kept)
	for _, s := range pv.Plan.Steps {
		for _, id := range s.Objects {
			if (in.facts == nil || in.facts.LiveOf(id) != nil) && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	live, err := getAll(ctx, c, ids)
	for _, id := range slices.SortedFunc(maps.Keys(live), resource.Compare) {
		pv.Objects.At(id).Live = live[id]
	}
	return err
}

// getAll reads the objects of ids whole, as many at once as the engine applies; objects that do
// not exist, or whose kind is not served, are left out.
func getAll(ctx context.Context, c Cluster, ids []resource.Identity) (map[resource.Identity]*unstructured.Unstructured, error) {
	out := map[resource.Identity]*unstructured.Unstructured{}
	var mu sync.Mutex
	errs := par.Each(ctx, ids, engine.DefaultConcurrency, func(ctx context.Context, id resource.Identity) error {
		obj, err := c.Get(ctx, id)
		if cluster.IsUnknownKind(err) {
			return nil
		}
		if err != nil || obj == nil {
			return err
		}
		mu.Lock()
		out[id] = obj
		mu.Unlock()
		return nil
	})
	return out, errors.Join(errs...)
}
