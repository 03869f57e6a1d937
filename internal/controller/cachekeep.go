package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
)

// The controller's caches hold what it reads of each object and nothing else: a tenant's
// annotations, labels and managed fields (kubectl's last-applied-configuration, say) would
// otherwise be held for as long as the object lives, and any tenant may write as many of them
// as its quota allows, in objects the controller caches for every namespace.

// AnnotationsDigestKey is the annotation a cached Release keeps in place of its own: a digest
// of them, so that a change of an annotation still reconciles the Release. The controller reads
// the value of one annotation only, v1alpha1.ReconcileRequestAnnotation, which is kept beside it
// (bounded: reconcileRequest).
const AnnotationsDigestKey = "berth.dev/cached-annotations-digest"

// keepIdentity keeps of a ConfigMap's, Secret's or ServiceAccount's metadata what the
// controller reads: that it exists (checkAccount), its name and namespace (releasesReading),
// and what tells one version from another (UID, resourceVersion, deletion). Anything else
// passes as it came (a tombstone, say).
func keepIdentity(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	kept := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
	}}
	return kept, nil
}

// keepRelease keeps of a Release what the controller reads: its spec, status, name, namespace,
// generation, finalizers and deletion; its annotations become one digest of them (a change of
// an annotation reconciles it) and its reconcile request; its labels (a shard's selector is the API server's to apply),
// managed fields and owner references are dropped.
func keepRelease(obj any) (any, error) {
	rel, ok := obj.(*v1alpha1.Release)
	if !ok {
		return obj, nil
	}
	rel.ManagedFields = nil
	rel.Labels = rolloutLabels(rel.Labels)
	rel.OwnerReferences = nil
	if len(rel.Annotations) > 0 {
		kept := map[string]string{AnnotationsDigestKey: annotationsDigest(rel.Annotations)}
		if v, ok := rel.Annotations[v1alpha1.ReconcileRequestAnnotation]; ok {
			kept[v1alpha1.ReconcileRequestAnnotation] = reconcileRequest(v)
		}
		rel.Annotations = kept
	}
	return rel, nil
}

// rolloutLabels are the labels of a Release that name the Rollout that keeps it (which the
// Rollout controller lists them by), or nil when it has none. Each value holds at most 63
// characters.
func rolloutLabels(labels map[string]string) map[string]string {
	var kept map[string]string
	for _, k := range []string{v1alpha1.RolloutLabel, v1alpha1.RolloutClusterLabel, v1alpha1.RolloutTargetLabel} {
		if v, ok := labels[k]; ok {
			if kept == nil {
				kept = map[string]string{}
			}
			kept[k] = v
		}
	}
	return kept
}

// keepRollout keeps of a Rollout what the controller reads: its spec, status, name, namespace,
// generation, UID, labels (copied to its Releases) and the one annotation it reads (an
// approval); its managed fields and other annotations are dropped.
func keepRollout(obj any) (any, error) {
	ro, ok := obj.(*v1alpha1.Rollout)
	if !ok {
		return obj, nil
	}
	ro.ManagedFields = nil
	if v, ok := ro.Annotations[v1alpha1.ApprovedAnnotation]; ok && len(v) <= 128 {
		ro.Annotations = map[string]string{v1alpha1.ApprovedAnnotation: v}
	} else {
		ro.Annotations = nil
	}
	return ro, nil
}

// annotationsDigest is a digest of annotations, the same for the same keys and values.
func annotationsDigest(annotations map[string]string) string {
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	d := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(d, "%d:%s%d:%s", len(k), k, len(annotations[k]), annotations[k])
	}
	return hex.EncodeToString(d.Sum(nil)[:16])
}

// cacheByObject is what the controller's cache holds of each kind it caches; shard, when not
// every Release's, selects the Releases.
func cacheByObject(shard Shard) map[client.Object]cache.ByObject {
	rel := cache.ByObject{Transform: keepRelease}
	if !shard.All() {
		// A shard neither watches nor caches the other shards' Releases.
		rel.Label = shard.selector
	}
	ro := cache.ByObject{Transform: keepRollout}
	if !shard.All() {
		ro.Label = shard.selector
	}
	return map[client.Object]cache.ByObject{
		&v1alpha1.Release{}:          rel,
		&v1alpha1.Rollout{}:          ro,
		metadataOf("ConfigMap"):      {Transform: keepIdentity},
		metadataOf("Secret"):         {Transform: keepIdentity},
		metadataOf("ServiceAccount"): {Transform: keepIdentity},
	}
}

// ErrReleaseUpdate says the controller was about to Update a Release it read from its cache.
var ErrReleaseUpdate = errors.New("a Release read from the cache is written by a patch of what changed, never by Update: the cache keeps none of its labels, owner references or annotations, which an Update would erase")

// patchesReleases is a client that refuses to Update a Release (ErrReleaseUpdate): what the
// controller reads of one through its cache is cut (keepRelease), and only a patch of what it
// changed leaves the rest as its owner wrote it.
type patchesReleases struct{ client.Client }

func (c patchesReleases) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if _, ok := obj.(*v1alpha1.Release); ok {
		return ErrReleaseUpdate
	}
	return c.Client.Update(ctx, obj, opts...)
}
