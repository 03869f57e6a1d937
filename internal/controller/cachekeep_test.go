package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
)

// tenantMetadata is what a tenant may write on any object's metadata, large.
func tenantMetadata(name string) metav1.ObjectMeta {
	now := metav1.Now()
	big := strings.Repeat("x", 250<<10)
	return metav1.ObjectMeta{
		Name: name, Namespace: "team-a", UID: "u-1", ResourceVersion: "42", Generation: 3,
		CreationTimestamp: now, DeletionTimestamp: &now, Finalizers: []string{Finalizer},
		Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": big, "stamp": "1"},
		Labels:          map[string]string{"big": strings.Repeat("y", 63), "app": "a"},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{}}`)}}},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Thing", Name: big[:100]}},
	}
}

// TestKeepIdentity: of a ConfigMap's, Secret's or ServiceAccount's metadata the cache keeps its
// name, namespace, UID, resourceVersion, generation and timestamps, nothing else.
func TestKeepIdentity(t *testing.T) {
	for _, kind := range []string{"ConfigMap", "Secret", "ServiceAccount"} {
		in := metadataOf(kind)
		in.ObjectMeta = tenantMetadata("values")
		want := metav1.ObjectMeta{
			Name: "values", Namespace: "team-a", UID: "u-1", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: in.CreationTimestamp, DeletionTimestamp: in.DeletionTimestamp,
		}
		out, err := keepIdentity(in)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*metav1.PartialObjectMetadata)
		if diff := cmp.Diff(want, got.ObjectMeta); diff != "" {
			t.Errorf("%s: kept metadata (-want +got):\n%s", kind, diff)
		}
		if got.Kind != kind {
			t.Errorf("%s: kind %q after the transform", kind, got.Kind)
		}
	}
	// Anything else (a tombstone, say) passes as it came.
	if out, _ := keepIdentity("tombstone"); out != "tombstone" {
		t.Errorf("a tombstone became %v", out)
	}
}

// TestKeepRelease: of a Release the cache keeps its spec, status and the metadata the
// controller reads; its annotations become one digest that changes when they change, and its
// reconcile request, bounded; labels, managed fields and owner references go.
func TestKeepRelease(t *testing.T) {
	in := &v1alpha1.Release{ObjectMeta: tenantMetadata("app")}
	in.Spec.Chart.Name = "app"
	in.Spec.Timeout = &metav1.Duration{}
	in.Status.ObservedGeneration = 2
	spec, status := *in.Spec.DeepCopy(), *in.Status.DeepCopy()
	out, err := keepRelease(in.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*v1alpha1.Release)
	want := metav1.ObjectMeta{
		Name: "app", Namespace: "team-a", UID: "u-1", ResourceVersion: "42", Generation: 3,
		CreationTimestamp: in.CreationTimestamp, DeletionTimestamp: in.DeletionTimestamp, Finalizers: []string{Finalizer},
		Annotations: map[string]string{AnnotationsDigestKey: annotationsDigest(in.Annotations)},
	}
	if diff := cmp.Diff(want, got.ObjectMeta); diff != "" {
		t.Errorf("kept metadata (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(spec, got.Spec); diff != "" {
		t.Errorf("spec changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(status, got.Status); diff != "" {
		t.Errorf("status changed (-want +got):\n%s", diff)
	}

	changed := in.DeepCopy()
	changed.Annotations["stamp"] = "2"
	out, _ = keepRelease(changed)
	if d := out.(*v1alpha1.Release).Annotations[AnnotationsDigestKey]; d == got.Annotations[AnnotationsDigestKey] {
		t.Error("a changed annotation left the digest as it was: the Release would not be reconciled")
	}
	// A key and value that run into each other are not the same annotations.
	if annotationsDigest(map[string]string{"ab": "c"}) == annotationsDigest(map[string]string{"a": "bc"}) {
		t.Error("annotations ab=c and a=bc have one digest")
	}
	// The reconcile request is kept as it is, bounded, beside the digest, and a new one changes
	// the digest: the Release is reconciled.
	asked := in.DeepCopy()
	asked.Annotations[v1alpha1.ReconcileRequestAnnotation] = "2026-01-02T03:04:05.000000006Z"
	out, _ = keepRelease(asked.DeepCopy())
	wantAnnotations := map[string]string{
		AnnotationsDigestKey:                annotationsDigest(asked.Annotations),
		v1alpha1.ReconcileRequestAnnotation: "2026-01-02T03:04:05.000000006Z",
	}
	if diff := cmp.Diff(wantAnnotations, out.(*v1alpha1.Release).Annotations); diff != "" {
		t.Errorf("kept annotations with a reconcile request (-want +got):\n%s", diff)
	}
	again := asked.DeepCopy()
	again.Annotations[v1alpha1.ReconcileRequestAnnotation] = "2026-01-02T03:04:06Z"
	if a, b := out.(*v1alpha1.Release).Annotations[AnnotationsDigestKey], annotationsDigest(again.Annotations); a == b {
		t.Error("a new reconcile request left the digest as it was: the Release would not be reconciled")
	}
	asked.Annotations[v1alpha1.ReconcileRequestAnnotation] = strings.Repeat("r", 250<<10)
	out, _ = keepRelease(asked)
	if v := out.(*v1alpha1.Release).Annotations[v1alpha1.ReconcileRequestAnnotation]; len(v) > v1alpha1.MaxReconcileRequestLength {
		t.Errorf("a reconcile request of 250 KiB is kept as %d bytes", len(v))
	}
	none := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}
	out, _ = keepRelease(none)
	if a := out.(*v1alpha1.Release).Annotations; a != nil {
		t.Errorf("a Release without annotations got %v", a)
	}
}

// updateRecorder is a client whose Update only records what it was given.
type updateRecorder struct {
	client.Client
	updated []client.Object
}

func (u *updateRecorder) Update(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
	u.updated = append(u.updated, obj)
	return nil
}

// TestReleasesArePatched: the controller's client refuses to Update a Release, which it reads
// cut from its cache, before anything is sent; other objects pass.
func TestReleasesArePatched(t *testing.T) {
	inner := &updateRecorder{}
	c := patchesReleases{inner}
	rel := &v1alpha1.Release{ObjectMeta: tenantMetadata("web")}
	if err := c.Update(t.Context(), rel); !errors.Is(err, ErrReleaseUpdate) {
		t.Errorf("Update of a Release: %v, want ErrReleaseUpdate", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"}}
	if err := c.Update(t.Context(), cm); err != nil || len(inner.updated) != 1 || inner.updated[0] != cm {
		t.Errorf("Update of a ConfigMap: %v, sent %v", err, inner.updated)
	}
}
