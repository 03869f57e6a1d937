package lifecycle

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	releasev1 "helm.sh/helm/v4/pkg/release/v1"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// recordedHook is a hook of a release with the record Helm keeps of its last run.
type recordedHook struct {
	resource.Hook
	record *release.Hook
}

// hooksOf parses the hooks recorded in a release.
func hooksOf(rel *release.Release) ([]recordedHook, []resource.Hook, error) {
	var out []recordedHook
	var plain []resource.Hook
	for _, rh := range rel.Hooks {
		objs, err := resource.ParseManifest(rh.Manifest)
		if err != nil {
			return nil, nil, fmt.Errorf("release %s: hook %s: %w", rel.Name, rh.Path, err)
		}
		for _, obj := range objs {
			h, ok, err := resource.ParseHook(obj)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				out = append(out, recordedHook{Hook: h, record: rh})
				plain = append(plain, h)
			}
		}
	}
	return out, plain, nil
}

// runHooks runs the release's hooks for event one after another, in Helm's order, each to an
// observed outcome; it stops at the first that fails. Each hook's last run is recorded in rel.
func (d Deps) runHooks(ctx context.Context, rel *release.Release, event resource.HookEvent, skip bool) error {
	if skip {
		return nil
	}
	hooks, plain, err := hooksOf(rel)
	if err != nil {
		return err
	}
	byID := map[resource.Identity]recordedHook{}
	for _, h := range hooks {
		byID[h.Identity] = h
	}
	// As in Helm, hooks that succeeded are deleted (hook-succeeded) only once every hook of the
	// event succeeded: a later hook may need an earlier one (a Job its ServiceAccount).
	succeeded := map[resource.Identity]types.UID{}
	for _, h := range resource.HooksFor(plain, event) {
		id, uid, err := d.runHook(ctx, rel.Namespace, byID[h.Identity], event)
		if err != nil {
			return fmt.Errorf("failed %s: %w", event, err)
		}
		if h.HasDeletePolicy(resource.HookSucceeded) {
			succeeded[id] = uid
		}
	}
	for id, uid := range succeeded {
		if err := d.removeHook(ctx, id, uid); err != nil {
			return fmt.Errorf("%s: delete hook (hook-succeeded): %w", event, err)
		}
	}
	return nil
}

// runHook runs one hook to its outcome and returns the identity (namespace filled in) and UID of
// the object it created.
func (d Deps) runHook(ctx context.Context, namespace string, h recordedHook, event resource.HookEvent) (resource.Identity, types.UID, error) {
	obj := h.Object.DeepCopy()
	if err := d.Cluster.Normalize(obj, namespace); err != nil {
		return resource.Identity{}, "", fmt.Errorf("hook %s: %w", h.Identity, err)
	}
	id := resource.IdentityOf(obj)
	emit := d.emitter()
	if h.HasDeletePolicy(resource.BeforeHookCreation) {
		if err := d.removeHook(ctx, id, ""); err != nil {
			return id, "", err
		}
	}
	start := d.now()
	h.record.LastRun = releasev1.HookExecution{StartedAt: start, Phase: releasev1.HookPhaseRunning}
	emit(engine.Event{Type: engine.HookStarted, Step: string(event), Object: id})
	created, res, err := d.Cluster.RunHook(ctx, obj, func(id resource.Identity, r readiness.Result) {
		emit(engine.Event{Type: engine.ObjectProgress, Step: string(event), Object: id, State: r.State, Message: r.Message})
	})
	if created == nil && err != nil {
		h.record.LastRun.Phase = releasev1.HookPhaseFailed
		h.record.LastRun.CompletedAt = d.now()
		return id, "", err
	}
	h.record.LastRun.CompletedAt = d.now()
	took := h.record.LastRun.CompletedAt.Sub(start)
	if err != nil {
		h.record.LastRun.Phase = releasev1.HookPhaseUnknown
		return id, "", fmt.Errorf("hook %s: %w", id, err)
	}
	if res.State == readiness.Failed {
		h.record.LastRun.Phase = releasev1.HookPhaseFailed
		emit(engine.Event{Type: engine.HookFailed, Step: string(event), Object: id, Message: res.Message, Duration: took})
		if h.HasDeletePolicy(resource.HookFailed) {
			if derr := d.removeHook(ctx, id, created.GetUID()); derr != nil {
				return id, "", fmt.Errorf("hook %s failed: %s; and %w", id, res.Message, derr)
			}
		}
		return id, "", fmt.Errorf("hook %s failed: %s", id, res.Message)
	}
	h.record.LastRun.Phase = releasev1.HookPhaseSucceeded
	emit(engine.Event{Type: engine.HookDone, Step: string(event), Object: id, Message: res.Message, Duration: took})
	return id, created.GetUID(), nil
}

// removeHook deletes a hook object (the one with uid, or whatever has its name when uid is empty)
// and waits until it is gone, so that the next run can be created under the same name.
func (d Deps) removeHook(ctx context.Context, id resource.Identity, uid types.UID) error {
	if uid == "" {
		live, err := d.Cluster.Get(ctx, id)
		if err != nil || live == nil {
			return err
		}
		uid = live.GetUID()
	}
	if _, err := d.Cluster.Delete(ctx, id, uid, cluster.DeleteOptions{Propagation: metav1.DeletePropagationBackground}); err != nil {
		return fmt.Errorf("hook %s: %w", id, err)
	}
	return d.Cluster.WaitAbsent(ctx, map[resource.Identity]types.UID{id: uid}, nil)
}

func (d Deps) emitter() func(engine.Event) {
	if d.Events == nil {
		return func(engine.Event) {}
	}
	return d.Events
}
