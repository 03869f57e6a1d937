package resource

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// installOrder is Helm v4's InstallOrder (helm.sh/helm/v4/pkg/release/v1/util): kinds earlier in
// the list are installed before kinds later in it.
var installOrder = [...]string{
	"PriorityClass",
	"Namespace",
	"NetworkPolicy",
	"ResourceQuota",
	"LimitRange",
	"PodSecurityPolicy",
	"PodDisruptionBudget",
	"ServiceAccount",
	"Secret",
	"SecretList",
	"ConfigMap",
	"StorageClass",
	"PersistentVolume",
	"PersistentVolumeClaim",
	"CustomResourceDefinition",
	"ClusterRole",
	"ClusterRoleList",
	"ClusterRoleBinding",
	"ClusterRoleBindingList",
	"Role",
	"RoleList",
	"RoleBinding",
	"RoleBindingList",
	"Service",
	"DaemonSet",
	"Pod",
	"ReplicationController",
	"ReplicaSet",
	"Deployment",
	"HorizontalPodAutoscaler",
	"StatefulSet",
	"Job",
	"CronJob",
	"IngressClass",
	"Ingress",
	"APIService",
	"MutatingWebhookConfiguration",
	"ValidatingWebhookConfiguration",
}

// uninstallOrder is Helm v4's UninstallOrder: validating webhooks go before mutating ones so that
// no webhook blocks the removal of the others.
var uninstallOrder = [...]string{
	"ValidatingWebhookConfiguration",
	"MutatingWebhookConfiguration",
	"APIService",
	"Ingress",
	"IngressClass",
	"Service",
	"CronJob",
	"Job",
	"StatefulSet",
	"HorizontalPodAutoscaler",
	"Deployment",
	"ReplicaSet",
	"ReplicationController",
	"Pod",
	"DaemonSet",
	"RoleBindingList",
	"RoleBinding",
	"RoleList",
	"Role",
	"ClusterRoleBindingList",
	"ClusterRoleBinding",
	"ClusterRoleList",
	"ClusterRole",
	"CustomResourceDefinition",
	"PersistentVolumeClaim",
	"PersistentVolume",
	"StorageClass",
	"ConfigMap",
	"SecretList",
	"Secret",
	"ServiceAccount",
	"PodDisruptionBudget",
	"PodSecurityPolicy",
	"LimitRange",
	"ResourceQuota",
	"NetworkPolicy",
	"Namespace",
	"PriorityClass",
}

// Ordered reports whether Helm's install (and uninstall) order names kind; Helm puts every other
// kind after them.
func Ordered(kind string) bool { return slices.Contains(installOrder[:], kind) }

// InstallOrder returns the kinds in the order Helm installs them.
func InstallOrder() []string { return slices.Clone(installOrder[:]) }

// UninstallOrder returns the kinds in the order Helm uninstalls them.
func UninstallOrder() []string { return slices.Clone(uninstallOrder[:]) }

// SortForInstall returns the objects in Helm's install order. The sort is stable: objects of one
// kind keep their relative order. As in Helm, kinds not in the order go last, sorted by kind name.
func SortForInstall(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	return sortByKind(objs, installOrder[:])
}

// SortForUninstall returns the objects in Helm's uninstall order. Helm v4 places kinds not in the
// order last here too (sorted by kind name), and so does this function.
func SortForUninstall(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	return sortByKind(objs, uninstallOrder[:])
}

// SortKinds returns a stable ordering of items by kind under order, Helm's rule for manifests and
// hooks: known kinds by their position, unknown kinds after them by name.
func SortKinds[T any](items []T, kind func(T) string, order []string) []T {
	rank := make(map[string]int, len(order))
	for i, k := range order {
		rank[k] = i
	}
	out := slices.Clone(items)
	slices.SortStableFunc(out, func(a, b T) int {
		ka, kb := kind(a), kind(b)
		ra, aok := rank[ka]
		rb, bok := rank[kb]
		switch {
		case aok && bok:
			return ra - rb
		case aok:
			return -1
		case bok:
			return 1
		default:
			return cmp.Compare(ka, kb)
		}
	})
	return out
}

func sortByKind(objs []*unstructured.Unstructured, order []string) []*unstructured.Unstructured {
	return SortKinds(objs, (*unstructured.Unstructured).GetKind, order)
}

// workloads are the kinds of Helm's install order that make Pods.
var workloads = []string{"DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment", "StatefulSet", "Job", "CronJob"}

// dependsOn names, for the kinds of Helm's install order that depend on others when they are
// created, the kinds before them they depend on; allBefore, every kind before them in the order
// (but the workloads and what scales them, for a workload). Every kind depends on Namespace. These are the reasons of
// Helm's order:
//   - a Secret of a ServiceAccount's token is removed when its ServiceAccount does not exist;
//   - a PersistentVolume names its StorageClass, and a PersistentVolumeClaim is given its
//     StorageClass, quota and limits when it is created;
//   - a binding is checked against the permissions of the role it binds (the API server refuses
//     to bind a role it cannot read unless the user may bind any);
//   - a Pod is admitted and started with what exists when it is made: its ServiceAccount,
//     Secrets, ConfigMaps, volumes, permissions, quota, limits, PriorityClass, the
//     NetworkPolicies that isolate it, the disruption budget that covers it and the Services
//     whose variables it gets; so every kind before the workloads goes before them, and the
//     workloads go together (Helm waits for none of them to be ready before the next);
//   - an Ingress names its IngressClass, Services and TLS Secrets;
//   - a HorizontalPodAutoscaler scales a workload, and an APIService and the webhooks send
//     requests to the workloads behind their Services: the webhooks, last, intercept nothing of
//     the chart's own before the rest is applied.
var dependsOn = map[string][]string{
	"Secret":                         {"ServiceAccount"},
	"SecretList":                     {"ServiceAccount"},
	"PersistentVolume":               {"StorageClass"},
	"PersistentVolumeClaim":          {"ResourceQuota", "LimitRange", "StorageClass", "PersistentVolume"},
	"ClusterRoleBinding":             {"ClusterRole", "ClusterRoleList"},
	"ClusterRoleBindingList":         {"ClusterRole", "ClusterRoleList"},
	"RoleBinding":                    {"ClusterRole", "ClusterRoleList", "Role", "RoleList"},
	"RoleBindingList":                {"ClusterRole", "ClusterRoleList", "Role", "RoleList"},
	"Ingress":                        {"IngressClass", "Service", "Secret", "SecretList"},
	"HorizontalPodAutoscaler":        allBefore,
	"APIService":                     allBefore,
	"MutatingWebhookConfiguration":   allBefore,
	"ValidatingWebhookConfiguration": allBefore,
}

// allBefore marks a kind that depends on every kind before it in Helm's install order.
var allBefore = []string{"*"}

// dependsOnKind reports whether kind, of Helm's install order, depends on kind before (earlier
// in the order) when it is created.
func dependsOnKind(kind, before string) bool {
	if before == "Namespace" {
		return true
	}
	if slices.Contains(workloads, kind) {
		return !slices.Contains(workloads, before) && before != "HorizontalPodAutoscaler"
	}
	deps := dependsOn[kind]
	return slices.Contains(deps, allBefore[0]) || slices.Contains(deps, before)
}

// InstallStages splits objects sorted in Helm's install order (SortForInstall) into the stages
// they are applied in, one after the other: each kind goes in the first stage after every kind
// before it it depends on (dependsOn), so that what depends on another kind is applied only once
// that kind is, as in Helm's order, and kinds that depend on none of each other go together.
// Objects of kinds the order does not name (custom resources, mostly) go last, together. Within
// a stage, objects keep their order.
func InstallStages(sorted []*unstructured.Unstructured) [][]*unstructured.Unstructured {
	return stages(sorted, dependsOnKind)
}

// installRank is each kind's place in Helm's install order.
var installRank = func() map[string]int {
	m := make(map[string]int, len(installOrder))
	for i, k := range installOrder {
		m[k] = i
	}
	return m
}()

// related reports whether one of two kinds of Helm's order depends on the other (dependsOn).
func related(a, b string) bool {
	if installRank[a] < installRank[b] {
		a, b = b, a
	}
	return dependsOnKind(a, b)
}

// UninstallStages splits objects sorted in Helm's uninstall order (SortForUninstall) into the
// stages they are deleted in, one after the other: each kind goes in the first stage after every
// kind before it in that order that it depends on or that depends on it (dependsOn), so that
// where Helm's uninstall order is between kinds that depend on each other it is kept (a workload
// before what its Pods use, a binding before its role, the namespace last), and kinds that depend
// on none of each other go together. Objects of kinds the order does not name go last, together,
// as in Helm's order.
func UninstallStages(sorted []*unstructured.Unstructured) [][]*unstructured.Unstructured {
	return stages(sorted, related)
}

// stages splits sorted objects into stages: each kind of Helm's order in the first stage after
// every kind before it that waits(kind, before) says it waits for; other kinds last, together.
func stages(sorted []*unstructured.Unstructured, waits func(kind, before string) bool) [][]*unstructured.Unstructured {
	stage := map[string]int{} // by kind, of the ordered kinds present
	var kinds []string
	last := -1
	for _, obj := range sorted {
		kind := obj.GetKind()
		if !Ordered(kind) {
			continue
		}
		if _, ok := stage[kind]; ok {
			continue
		}
		s := 0
		for _, before := range kinds {
			if waits(kind, before) {
				s = max(s, stage[before]+1)
			}
		}
		stage[kind] = s
		kinds = append(kinds, kind)
		last = max(last, s)
	}
	out := make([][]*unstructured.Unstructured, last+2)
	for _, obj := range sorted {
		s, ok := stage[obj.GetKind()]
		if !ok {
			s = last + 1
		}
		out[s] = append(out[s], obj)
	}
	return slices.DeleteFunc(out, func(objs []*unstructured.Unstructured) bool { return len(objs) == 0 })
}
