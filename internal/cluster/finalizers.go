package cluster

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/berthdev/berth/internal/resource"
)

// FinalizerHolder says who removes a finalizer.
type FinalizerHolder string

const (
	// HeldByCRDCleanup: the API server's CRD cleanup, which deletes a CRD's instances and removes
	// customresourcecleanup.apiextensions.k8s.io once none is left. The CRD's Terminating condition
	// says what it is at.
	HeldByCRDCleanup FinalizerHolder = "apiserver-crd-cleanup"
	// HeldByNamespaceController: the namespace controller, which deletes a namespace's content
	// and removes "kubernetes" from spec.finalizers once it is gone. The namespace's
	// NamespaceDeletion*, NamespaceContentRemaining and NamespaceFinalizersRemaining conditions say
	// what is left.
	HeldByNamespaceController FinalizerHolder = "namespace-controller"
	// HeldByGarbageCollector: the garbage collector, which removes foregroundDeletion once every
	// blocking dependent is gone, and orphan once the dependents are orphaned.
	HeldByGarbageCollector FinalizerHolder = "garbage-collector"
	// HeldByPVProtection: the PV protection controller, which removes kubernetes.io/pv-protection
	// once no claim is bound to the volume.
	HeldByPVProtection FinalizerHolder = "pv-protection-controller"
	// HeldByPVCProtection: the PVC protection controller, which removes
	// kubernetes.io/pvc-protection once no Pod uses the claim.
	HeldByPVCProtection FinalizerHolder = "pvc-protection-controller"
	// HeldByJobController: the Job controller, which removes batch.kubernetes.io/job-tracking once
	// it has counted the Pod.
	HeldByJobController FinalizerHolder = "job-controller"
	// HeldByController: a controller outside Kubernetes, known by the finalizer's domain; nothing
	// in the cluster removes the finalizer if that controller is gone.
	HeldByController FinalizerHolder = "controller"
	// HeldByUnknown: a finalizer with no domain, of no controller Kubernetes runs.
	HeldByUnknown FinalizerHolder = "unknown"
)

// Built-in finalizers that Kubernetes itself removes.
const (
	CRDCleanupFinalizer    = "customresourcecleanup.apiextensions.k8s.io"
	NamespaceFinalizer     = string(corev1.FinalizerKubernetes)
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	JobTrackingFinalizer   = "batch.kubernetes.io/job-tracking"
)

// HolderOf says who removes the finalizer f, and for a controller outside Kubernetes the domain
// that names it.
func HolderOf(f string) (FinalizerHolder, string) {
	switch f {
	case CRDCleanupFinalizer:
		return HeldByCRDCleanup, ""
	case NamespaceFinalizer:
		return HeldByNamespaceController, ""
	case metav1.FinalizerDeleteDependents, metav1.FinalizerOrphanDependents:
		return HeldByGarbageCollector, ""
	case PVProtectionFinalizer:
		return HeldByPVProtection, ""
	case PVCProtectionFinalizer:
		return HeldByPVCProtection, ""
	case JobTrackingFinalizer:
		return HeldByJobController, ""
	}
	if domain, _, ok := strings.Cut(f, "/"); ok {
		return HeldByController, domain
	}
	return HeldByUnknown, ""
}

// Condition is one of an object's status conditions, as the object states it.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Finalizers reports the finalizers that obj, being deleted, waits on: metadata.finalizers, and
// for a Namespace spec.finalizers too. Each names its holder and, for the built-in ones whose
// holder writes why it waits on the object, the conditions that say so.
func Finalizers(obj *unstructured.Unstructured) []FinalizerReport {
	names := slices.Clone(obj.GetFinalizers())
	if isNamespace(obj) {
		spec, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "finalizers")
		for _, f := range spec {
			if !slices.Contains(names, f) {
				names = append(names, f)
			}
		}
	}
	out := make([]FinalizerReport, 0, len(names))
	for _, f := range names {
		holder, domain := HolderOf(f)
		out = append(out, FinalizerReport{Name: f, Holder: holder, Domain: domain, Conditions: waitConditions(obj, holder)})
	}
	return out
}

// waitConditions are obj's conditions by which holder says why it has not removed its
// finalizer yet: a CRD's Terminating condition, and a Namespace's deletion conditions that are
// True.
func waitConditions(obj *unstructured.Unstructured, holder FinalizerHolder) []Condition {
	var want func(Condition) bool
	switch {
	case holder == HeldByCRDCleanup && isCRD(obj):
		want = func(c Condition) bool { return c.Type == string(apiextensionsv1.Terminating) }
	case holder == HeldByNamespaceController && isNamespace(obj):
		want = func(c Condition) bool {
			switch corev1.NamespaceConditionType(c.Type) {
			case corev1.NamespaceDeletionDiscoveryFailure, corev1.NamespaceDeletionContentFailure,
				corev1.NamespaceDeletionGVParsingFailure, corev1.NamespaceContentRemaining,
				corev1.NamespaceFinalizersRemaining:
				return c.Status == string(corev1.ConditionTrue)
			}
			return false
		}
	default:
		return nil
	}
	var out []Condition
	for _, c := range conditions(obj) {
		if want(c) {
			out = append(out, c)
		}
	}
	return out
}

func conditions(obj *unstructured.Unstructured) []Condition {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []Condition
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		s := func(k string) string { v, _ := m[k].(string); return v }
		out = append(out, Condition{Type: s("type"), Status: s("status"), Reason: s("reason"), Message: s("message")})
	}
	return out
}

func isCRD(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == apiextensionsv1.GroupName && gvk.Kind == "CustomResourceDefinition"
}

func isNamespace(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Namespace"
}

// maxWaitedFor is how many of the objects a built-in finalizer's holder waits for are named.
const maxWaitedFor = 10

// WaitedFor finds the objects that the holder of a built-in finalizer on obj waits for: the
// instances of a CRD that are still there, the Pods that use a claim, the claim bound to a
// volume. It lists at most one kind of object, and names maxWaitedFor at most; what it cannot
// read, it leaves out.
func WaitedFor(ctx context.Context, dyn dynamic.Interface, obj *unstructured.Unstructured, f FinalizerReport) []DependentReport {
	switch f.Holder {
	case HeldByCRDCleanup:
		if isCRD(obj) {
			return crdInstances(ctx, dyn, obj)
		}
	case HeldByPVCProtection:
		if gvk := obj.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "PersistentVolumeClaim" {
			return claimUsers(ctx, dyn, obj)
		}
	case HeldByPVProtection:
		if gvk := obj.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "PersistentVolume" {
			return boundClaim(ctx, dyn, obj)
		}
	}
	return nil
}

// crdInstances lists the instances of the CRD obj that are still there.
func crdInstances(ctx context.Context, dyn dynamic.Interface, obj *unstructured.Unstructured) []DependentReport {
	var crd apiextensionsv1.CustomResourceDefinition
	if runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &crd) != nil {
		return nil
	}
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Served && (version == "" || v.Storage) {
			version = v.Name
		}
	}
	if version == "" {
		return nil
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
	list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: maxWaitedFor})
	if err != nil {
		return nil
	}
	out := make([]DependentReport, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, DependentReport{Object: resource.IdentityOf(&list.Items[i]), State: presence(&list.Items[i])})
	}
	slices.SortFunc(out, func(a, b DependentReport) int { return resource.Compare(a.Object, b.Object) })
	return out
}

// claimUsers lists the Pods, not yet finished, that use the claim obj.
func claimUsers(ctx context.Context, dyn dynamic.Interface, obj *unstructured.Unstructured) []DependentReport {
	list, err := dyn.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(obj.GetNamespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []DependentReport
	for i := range list.Items {
		var pod corev1.Pod
		if runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &pod) != nil {
			continue
		}
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
			return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == obj.GetName() ||
				v.Ephemeral != nil && pod.Name+"-"+v.Name == obj.GetName()
		}) {
			continue
		}
		out = append(out, DependentReport{Object: resource.IdentityOf(&list.Items[i]), State: presence(&list.Items[i])})
		if len(out) == maxWaitedFor {
			break
		}
	}
	slices.SortFunc(out, func(a, b DependentReport) int { return resource.Compare(a.Object, b.Object) })
	return out
}

// boundClaim names the claim that the volume obj is bound to, if it is still there.
func boundClaim(ctx context.Context, dyn dynamic.Interface, obj *unstructured.Unstructured) []DependentReport {
	ns, _, _ := unstructured.NestedString(obj.Object, "spec", "claimRef", "namespace")
	name, _, _ := unstructured.NestedString(obj.Object, "spec", "claimRef", "name")
	if name == "" {
		return nil
	}
	claim, err := dyn.Resource(corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return []DependentReport{{Object: resource.IdentityOf(claim), State: presence(claim)}}
}
