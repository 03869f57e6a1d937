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
