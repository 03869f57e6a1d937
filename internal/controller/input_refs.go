package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/berthdev/berth/api/v1alpha1"
)

// referencesIndex indexes Releases by the ConfigMaps and Secrets they read (Kind/name).
const referencesIndex = "berth.dev/references"

// referencesOf are the ConfigMaps and Secrets a Release reads, as Kind/name.
func referencesOf(obj client.Object) []string {
	rel, ok := obj.(*v1alpha1.Release)
	if !ok {
		return nil
	}
	var out []string
	if r := rel.Spec.Chart.SecretRef; r != nil {
		out = append(out, "Secret/"+r.Name)
	}
	if r := rel.Spec.Chart.ConfigMapRef; r != nil {
		out = append(out, "ConfigMap/"+r.Name)
	}
	if r := rel.Spec.Chart.Credentials; r != nil {
		out = append(out, "Secret/"+r.Name)
	}
	if r := rel.Spec.Chart.TLS; r != nil {
		out = append(out, "Secret/"+r.Name)
	}
	if r := rel.Spec.Chart.Verify; r != nil {
		out = append(out, verifySecrets(r)...)
	}
	for _, v := range rel.Spec.ValuesFrom {
		out = append(out, v.Kind+"/"+v.Name)
		if v.Decrypt != nil {
			out = append(out, "Secret/"+v.Decrypt.SecretRef.Name)
		}
	}
	if k := rel.Spec.KubeConfig; k != nil {
		out = append(out, "Secret/"+k.SecretRef.Name)
	}
	return out
}

// releasesReading maps a ConfigMap or Secret (of kind) to the Releases of its namespace that
// read it.
func releasesReading(c client.Reader, kind string) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list v1alpha1.ReleaseList
		err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace()),
			client.MatchingFields{referencesIndex: kind + "/" + obj.GetName()})
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list the Releases that read an object", "kind", kind, "name", obj.GetName())
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, rel := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rel)})
		}
		return out
	}
}

// metadataOf is the metadata-only form of a ConfigMap or Secret, which the controller watches
// without caching their contents.
func metadataOf(kind string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return m
}

// verifySecrets are the Secrets spec.chart.verify v reads: the keyring, cosign's key or
// trusted root, or notation's trust policy and store.
func verifySecrets(v *v1alpha1.KeyringReference) []string {
	var out []string
	if v.Name != "" {
		out = append(out, "Secret/"+v.Name)
	}
	if c := v.Cosign; c != nil && c.Key != nil {
		out = append(out, "Secret/"+c.Key.Name)
	}
	if c := v.Cosign; c != nil && c.TrustedRoot != nil {
		out = append(out, "Secret/"+c.TrustedRoot.Name)
	}
	if n := v.Notation; n != nil {
		out = append(out, "Secret/"+n.Name)
	}
	return out
}
