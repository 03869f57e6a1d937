package resource

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Helm's ownership metadata: the label and annotations that tie an object to a release.
const (
	ManagedByLabel             = "app.kubernetes.io/managed-by"
	ManagedByHelm              = "Helm"
	ReleaseNameAnnotation      = "meta.helm.sh/release-name"
	ReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// SetOwnership marks obj as owned by the release, merging Helm's label and annotations into
// those obj already has, exactly as Helm does before it creates or updates an object.
func SetOwnership(obj *unstructured.Unstructured, release, namespace string) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ManagedByLabel] = ManagedByHelm
	obj.SetLabels(labels)

	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ReleaseNameAnnotation] = release
	annotations[ReleaseNamespaceAnnotation] = namespace
	obj.SetAnnotations(annotations)
}

// OwnedBy returns the release that owns obj according to Helm's ownership metadata. ok is false
// unless obj has the managed-by: Helm label and both release annotations.
func OwnedBy(obj *unstructured.Unstructured) (release, namespace string, ok bool) {
	if obj.GetLabels()[ManagedByLabel] != ManagedByHelm {
		return "", "", false
	}
	annotations := obj.GetAnnotations()
	release, nameOK := annotations[ReleaseNameAnnotation]
	namespace, nsOK := annotations[ReleaseNamespaceAnnotation]
	if !nameOK || !nsOK || release == "" {
		return "", "", false
	}
	return release, namespace, true
}
