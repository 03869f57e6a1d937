package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/resource"
)

// stuckAfter is how long an object may wait on its finalizers before it counts as stuck rather
// than on its way out.
const stuckAfter = time.Minute

// waiting is an object being deleted that waits on a finalizer.
type waiting struct {
	id    resource.Identity
	gvr   schema.GroupVersionResource
	since time.Time
}

// stuckObjects finds objects that are being deleted and wait on finalizers, grouped by
// finalizer, and Argo CD's hook finalizer left on finished Jobs and Pods.
func (r *run) stuckObjects(ctx context.Context) {
	byFinalizer := map[string][]waiting{}
	for _, gvr := range r.listableResources() {
		l, err := r.Metadata.Resource(gvr.gvr).Namespace(r.opts.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue // kinds the user may not list are not checked; the permission findings say which matter
		}
		for i := range l.Items {
			m := &l.Items[i]
			if gvr.gvr == jobGVR || gvr.gvr == podGVR {
				r.leftoverHook(ctx, gvr.gvr, gvr.kind, m.ObjectMeta)
			}
			if len(m.Finalizers) == 0 {
				continue
			}
			id := resource.Identity{Group: gvr.gvr.Group, Kind: gvr.kind, Namespace: m.Namespace, Name: m.Name}
			if m.DeletionTimestamp != nil {
				if inGracePeriod(m, r.Now()) {
					continue
				}
				for _, f := range m.Finalizers {
					byFinalizer[f] = append(byFinalizer[f], waiting{id: id, gvr: gvr.gvr, since: m.DeletionTimestamp.Time})
				}
				continue
			}
			if slices.Contains(m.Finalizers, argoHookFinal) && (gvr.gvr == jobGVR || gvr.gvr == podGVR) {
				r.argoHook(ctx, gvr.gvr, id)
			}
		}
	}
	for _, f := range slices.Sorted(maps.Keys(byFinalizer)) {
		objs := byFinalizer[f]
		sort.Slice(objs, func(i, j int) bool { return objs[i].since.Before(objs[j].since) })
		oldest := objs[0]
		severity := Warning
		if r.Now().Sub(oldest.since) >= stuckAfter {
			severity = Blocker
		}
		names := make([]string, len(objs))
		for i, o := range objs {
			names[i] = o.id.String()
		}
		report := r.finalizerOf(ctx, oldest, f)
		problem := fmt.Sprintf("%d object(s) being deleted wait on finalizer %s, the oldest for %s: %s", len(objs), f, r.age(oldest.since), list(names, 5))
		if why := waitsWhy(report); why != "" {
			problem += "; " + oldest.id.String() + " " + why
		}
		r.add(Finding{
			Severity: severity, Check: "finalizer", Object: oldest.id,
			Problem:   problem,
			Breaks:    "uninstalls wait for these objects to go, and so does the deletion of their namespace",
			Fix:       finalizerFix(report),
			Finalizer: &report,
		})
	}
}

// finalizerOf reports the finalizer f of the object o: its holder, and for a built-in one, the
// object's conditions that say why the holder waits and the objects it waits for.
func (r *run) finalizerOf(ctx context.Context, o waiting, f string) cluster.FinalizerReport {
	holder, domain := cluster.HolderOf(f)
	report := cluster.FinalizerReport{Name: f, Holder: holder, Domain: domain}
	if holder == cluster.HeldByController || holder == cluster.HeldByUnknown {
		return report
	}
	obj, err := r.Dynamic.Resource(o.gvr).Namespace(o.id.Namespace).Get(ctx, o.id.Name, metav1.GetOptions{})
	if err != nil {
		return report
	}
	for _, got := range cluster.Finalizers(obj) {
		if got.Name == f {
			report = got
		}
	}
	report.WaitsFor = cluster.WaitedFor(ctx, r.Dynamic, obj, report)
	return report
}

// waitsWhy says, from a built-in finalizer's report, why its holder waits: the conditions the
// object states and the objects the holder waits for.
func waitsWhy(f cluster.FinalizerReport) string {
	var why []string
	for _, c := range f.Conditions {
		why = append(why, "states "+c.String())
	}
	if n := len(f.WaitsFor); n > 0 {
		objs := make([]string, n)
		for i, w := range f.WaitsFor {
			objs[i] = w.Object.String() + " (" + w.State + ")"
		}
		why = append(why, fmt.Sprintf("waits for %s", list(objs, 5)))
	}
	return strings.Join(why, "; ")
}

// finalizerFix says what to do about objects held by the finalizer f.
func finalizerFix(f cluster.FinalizerReport) string {
	holder := cluster.HolderName(f.Holder, f.Domain)
	switch f.Holder {
	case cluster.HeldByCRDCleanup:
		return "it is removed by " + holder + ": the API server deletes the instances and retries; remove what holds them (their own finalizers), or wait"
	case cluster.HeldByNamespaceController:
		return "it is removed by " + holder + ": see the namespace finding for what is left in it"
	case cluster.HeldByGarbageCollector:
		return "it is removed by " + holder + ": find out why the dependents do not go away"
	case cluster.HeldByPVCProtection:
		return "it is removed by " + holder + ": delete the Pods that use the claim, or wait until they finish"
	case cluster.HeldByPVProtection:
		return "it is removed by " + holder + ": delete the claim bound to the volume"
	}
	return fmt.Sprintf("it is removed by %s: make sure that runs, or remove the finalizer from each object if it is gone for good", holder)
}

// inGracePeriod reports whether an object being deleted gracefully (a Pod) is still in its grace
// period: its deletionTimestamp is when that ends, and until then it waits on the grace period,
// not yet on its finalizers.
func inGracePeriod(m *metav1.PartialObjectMetadata, now time.Time) bool {
	grace := m.DeletionGracePeriodSeconds
	return grace != nil && *grace > 0 && m.DeletionTimestamp.After(now)
}

// argoHook reports Argo CD's hook finalizer on a Job or Pod that finished: Argo CD removes it
// only while it syncs, so the object can never be deleted without it.
func (r *run) argoHook(ctx context.Context, gvr schema.GroupVersionResource, id resource.Identity) {
	obj, err := r.Dynamic.Resource(gvr).Namespace(id.Namespace).Get(ctx, id.Name, metav1.GetOptions{})
	if err != nil || !finished(obj) {
		return
	}
	r.add(Finding{
		Severity: Warning, Check: "finalizer", Object: id,
		Problem: fmt.Sprintf("finished, and still carries Argo CD's hook finalizer %s", argoHookFinal),
		Breaks:  "deleting it (a hook's delete policy, an uninstall, its namespace's deletion) hangs until Argo CD syncs again",
		Fix:     fmt.Sprintf("remove the finalizer: kubectl patch %s %s -n %s --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'", strings.ToLower(id.Kind), id.Name, id.Namespace),
	})
}

// leftoverHook reports a hook Job or Pod that finished and whose delete policy says it should
// have been deleted then: an operation that stopped before its hook's outcome was handled left
// it, and the next run of that hook may meet it.
func (r *run) leftoverHook(ctx context.Context, gvr schema.GroupVersionResource, kind string, m metav1.ObjectMeta) {
	events, policy := m.Annotations["helm.sh/hook"], m.Annotations["helm.sh/hook-delete-policy"]
	if events == "" || m.DeletionTimestamp != nil || !(strings.Contains(policy, "hook-succeeded") || strings.Contains(policy, "hook-failed")) {
		return
	}
	if len(m.OwnerReferences) > 0 {
		return // a hook Job's Pods go with it
	}
	obj, err := r.Dynamic.Resource(gvr).Namespace(m.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
	if err != nil || !finished(obj) {
		return
	}
	id := resource.Identity{Group: gvr.Group, Kind: kind, Namespace: m.Namespace, Name: m.Name}
	r.add(Finding{
		Severity: Warning, Check: "hook", Object: id,
		Problem: fmt.Sprintf("a %s hook that finished and is still here, though its delete policy is %s", events, policy),
		Breaks:  "the next run of this hook meets it (\"already exists\" for helm); an earlier operation stopped before deleting it",
		Fix:     fmt.Sprintf("kubectl delete %s %s -n %s", strings.ToLower(kind), m.Name, m.Namespace),
	})
}

// finished reports whether a Job completed or failed, or a Pod succeeded or failed.
func finished(obj *unstructured.Unstructured) bool {
	if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase == "Succeeded" || phase == "Failed" {
		return true
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if (m["type"] == "Complete" || m["type"] == "Failed") && m["status"] == "True" {
			return true
		}
	}
	return false
}

// skipCore are core resources not looked through: events (never finalized, and many), and the
// deprecated endpoints and componentstatuses, whose lists only draw warnings.
var skipCore = map[string]bool{"events": true, "endpoints": true, "componentstatuses": true}

type listable struct {
	gvr  schema.GroupVersionResource
	kind string
}

// listableResources are the resources the checks look through for stuck objects: every
// preferred version of a kind that can be listed (namespaced ones only with a namespace).
func (r *run) listableResources() []listable {
	lists, err := r.Discovery.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		r.unreadable(schema.GroupVersionResource{Resource: "discovery"}, "", "", err)
		return nil
	}
	var out []listable
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") || !slices.Contains(res.Verbs, "list") {
				continue
			}
			if r.opts.Namespace != "" && !res.Namespaced {
				continue
			}
			if gv.Group == "events.k8s.io" || (gv.Group == "" && skipCore[res.Name]) {
				continue
			}
			out = append(out, listable{gvr: gv.WithResource(res.Name), kind: res.Kind})
		}
	}
	return out
}
