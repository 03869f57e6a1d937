package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/berthdev/berth/api/v1alpha1"
)

// Reasons of a Release that waits for, or is stuck on, other Releases.
const (
	// ReasonDependencyNotReady: a Release it depends on is missing or not Ready; it is installed
	// or upgraded once they all are.
	ReasonDependencyNotReady = "DependencyNotReady"
	// ReasonDependencyCycle: its dependsOn leads back to itself; nothing happens until a
	// dependsOn changes.
	ReasonDependencyCycle = "DependencyCycle"
	// ReasonDependentsExist: the Release is deleted, and Releases that depend on it still
	// exist; it is uninstalled once they are gone.
	ReasonDependentsExist = "DependentsExist"
)

// dependsOnIndex indexes Releases by the names of the Releases (of their namespace) they depend
// on.
const dependsOnIndex = "berth.dev/dependsOn"

// dependsOnOf checks rel's spec.dependsOn and returns the names it depends on, once each.
func dependsOnOf(rel *v1alpha1.Release) ([]string, error) {
	var out []string
	for i, dep := range rel.Spec.DependsOn {
		field := fmt.Sprintf("dependsOn[%d]", i)
		if dep.Name == "" {
			return nil, invalid(field+".name", "is required: name a Release of namespace %s", rel.Namespace)
		}
		if dep.Namespace != "" && dep.Namespace != rel.Namespace {
			return nil, invalid(field+".namespace", "%q is not the Release's namespace: a Release can only depend on Releases of its own namespace (%s); remove the namespace, or move the Releases together",
				dep.Namespace, rel.Namespace)
		}
		if !slices.Contains(out, dep.Name) {
			out = append(out, dep.Name)
		}
	}
	return out, nil
}

// dependsOnNames are the names of the Releases of its own namespace a Release depends on, as
// indexed.
func dependsOnNames(obj client.Object) []string {
	rel, ok := obj.(*v1alpha1.Release)
	if !ok {
		return nil
	}
	var out []string
	for _, dep := range rel.Spec.DependsOn {
		if dep.Name != "" && (dep.Namespace == "" || dep.Namespace == rel.Namespace) && !slices.Contains(out, dep.Name) {
			out = append(out, dep.Name)
		}
	}
	return out
}

// DependencyError says why a Release does not act yet: the Releases it depends on that are
// missing or not Ready, or the cycle its dependsOn makes.
type DependencyError struct {
	// Reason is DependencyNotReady or DependencyCycle.
	Reason    string
	Namespace string
	// Waiting are the Releases depended on that are not Ready, each with why.
	Waiting []string
	// Cycle are the Releases of a cycle, from the Release back to itself.
	Cycle []string
}

func (e *DependencyError) Error() string {
	if e.Reason == ReasonDependencyCycle {
		return fmt.Sprintf("spec.dependsOn makes a cycle of Releases in namespace %s: %s; remove one of these dependencies",
			e.Namespace, strings.Join(e.Cycle, " -> "))
	}
	return fmt.Sprintf("waiting for Releases of namespace %s it depends on: %s", e.Namespace, strings.Join(e.Waiting, "; "))
}

func (e *DependencyError) conditionReason() string { return e.Reason }

// releasesOf reads the Releases of a namespace, by name: from the controller's cache, or, when it
// serves a shard, every shard's from the API server.
func (r *Reconciler) releasesOf(ctx context.Context, namespace string) (map[string]*v1alpha1.Release, error) {
	var reader client.Reader = r.Client
	if r.Releases != nil {
		reader = r.Releases
	}
	var list v1alpha1.ReleaseList
	if err := reader.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list the Releases of namespace %s: %w", namespace, err)
	}
	out := make(map[string]*v1alpha1.Release, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// dependencyCycle returns the cycle of dependsOn that leads from name back to itself, or nil.
func dependencyCycle(name string, byName map[string][]string) []string {
	visited := map[string]bool{}
	var path []string
	var walk func(n string) bool
	walk = func(n string) bool {
		path = append(path, n)
		for _, dep := range byName[n] {
			if dep == name {
				path = append(path, dep)
				return true
			}
			if !visited[dep] {
				visited[dep] = true
				if walk(dep) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if walk(name) {
		return path
	}
	return nil
}

// graphOf is the dependsOn of each Release, by name.
func graphOf(rels map[string]*v1alpha1.Release) map[string][]string {
	out := make(map[string][]string, len(rels))
	for name, rel := range rels {
		out[name] = dependsOnNames(rel)
	}
	return out
}

// checkCycle returns a *DependencyError when rel's dependsOn (deps) leads back to rel.
func (r *Reconciler) checkCycle(ctx context.Context, rel *v1alpha1.Release, deps []string) error {
	if len(deps) == 0 {
		return nil
	}
	rels, err := r.releasesOf(ctx, rel.Namespace)
	if err != nil {
		return err
	}
	g := graphOf(rels)
	g[rel.Name] = deps // the spec being reconciled, whatever the cache holds
	if cycle := dependencyCycle(rel.Name, g); cycle != nil {
		return &DependencyError{Reason: ReasonDependencyCycle, Namespace: rel.Namespace, Cycle: cycle}
	}
	return nil
}

// checkReady returns a *DependencyError naming the Releases of deps that are missing or not
// Ready for their current generation.
func (r *Reconciler) checkReady(ctx context.Context, rel *v1alpha1.Release, deps []string) error {
	if len(deps) == 0 {
		return nil
	}
	rels, err := r.releasesOf(ctx, rel.Namespace)
	if err != nil {
		return err
	}
	var waiting []string
	for _, name := range deps {
		if why := notReady(rels[name]); why != "" {
			waiting = append(waiting, name+" ("+why+")")
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	return &DependencyError{Reason: ReasonDependencyNotReady, Namespace: rel.Namespace, Waiting: waiting}
}

// notReady says why a Release depended on is not Ready; empty when it is.
func notReady(dep *v1alpha1.Release) string {
	switch {
	case dep == nil:
		return "does not exist"
	case !dep.DeletionTimestamp.IsZero():
		return "is being deleted"
	case dep.Status.ObservedGeneration != dep.Generation:
		return fmt.Sprintf("generation %d not reconciled yet", dep.Generation)
	}
	c := meta.FindStatusCondition(dep.Status.Conditions, ConditionReady)
	switch {
	case c == nil:
		return "not reconciled yet"
	case c.Status != "True":
		return fmt.Sprintf("Ready=%s, %s", c.Status, c.Reason)
	}
	return ""
}

// dependentsOf returns the names of the Releases that depend on rel and hold its uninstall:
// every one that exists, except rel itself and those rel depends on in turn (a cycle, whose
// Releases are uninstalled together).
func (r *Reconciler) dependentsOf(ctx context.Context, rel *v1alpha1.Release) ([]string, error) {
	rels, err := r.releasesOf(ctx, rel.Namespace)
	if err != nil {
		return nil, err
	}
	g := graphOf(rels)
	var out []string
	for name, deps := range g {
		if name == rel.Name || !slices.Contains(deps, rel.Name) || reaches(rel.Name, name, g) {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}

// reaches says whether from depends on to, directly or through others.
func reaches(from, to string, g map[string][]string) bool {
	seen := map[string]bool{from: true}
	next := []string{from}
	for len(next) > 0 {
		n := next[0]
		next = next[1:]
		for _, dep := range g[n] {
			if dep == to {
				return true
			}
			if !seen[dep] {
				seen[dep] = true
				next = append(next, dep)
			}
		}
	}
	return false
}

// relatedReleases maps a Release to those that wait on it: the Releases that depend on it (it may
// have become Ready, or changed its dependsOn), and the Releases it depends on (it may be gone,
// and they may be uninstalled now).
func relatedReleases(c client.Reader) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		rel, ok := obj.(*v1alpha1.Release)
		if !ok {
			return nil
		}
		var list v1alpha1.ReleaseList
		err := c.List(ctx, &list, client.InNamespace(rel.Namespace), client.MatchingFields{dependsOnIndex: rel.Name})
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list the Releases that depend on a Release", "name", rel.Name)
		}
		var out []reconcile.Request
		for _, dep := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&dep)})
		}
		for _, name := range dependsOnNames(rel) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: rel.Namespace, Name: name}})
		}
		return out
	}
}

// dependencyChanged passes the events of a Release that others may wait on: its creation and
// deletion, a change of its readiness as a dependency, of its spec, or the start of its deletion.
type dependencyChanged struct{ predicate.Funcs }

func (dependencyChanged) Create(event.CreateEvent) bool { return true }
func (dependencyChanged) Delete(event.DeleteEvent) bool { return true }

func (dependencyChanged) Update(e event.UpdateEvent) bool {
	o, ok := e.ObjectOld.(*v1alpha1.Release)
	n, ok2 := e.ObjectNew.(*v1alpha1.Release)
	if !ok || !ok2 {
		return false
	}
	return o.Generation != n.Generation || (notReady(o) == "") != (notReady(n) == "") ||
		o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
}
