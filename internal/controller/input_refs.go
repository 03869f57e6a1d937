package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/berthdev/berth/api/v1alpha1"
)

// MissingError says that a ConfigMap or Secret a Release names, or its key, is not there.
type MissingError struct {
	// Reason is the condition reason: ValuesMissing, ChartMissing or CredentialsMissing.
	Reason                     string
	Kind, Namespace, Name, Key string
	// NoObject says the object itself is missing, not only its key.
	NoObject bool
	// Next says what to do.
	Next string
}

func (e *MissingError) Error() string {
	if e.NoObject {
		return fmt.Sprintf("%s/%s/%s not found (key %s wanted): %s", e.Kind, e.Namespace, e.Name, e.Key, e.Next)
	}
	return fmt.Sprintf("%s/%s/%s has no key %s: %s", e.Kind, e.Namespace, e.Name, e.Key, e.Next)
}

// keyReader reads keys of the ConfigMaps and Secrets of a Release's namespace, with the rights
// of the client it is given (the Release's ServiceAccount's).
type keyReader struct {
	core      corev1client.CoreV1Interface
	namespace string
}

// read returns the content of key in the ConfigMap or Secret kind/name, a *MissingError
// (without Reason and Next) when the object or the key is not there.
func (k keyReader) read(ctx context.Context, kind, name, key string) ([]byte, error) {
	missing := &MissingError{Kind: kind, Namespace: k.namespace, Name: name, Key: key}
	var data map[string][]byte
	switch kind {
	case "ConfigMap":
		cm, err := k.core.ConfigMaps(k.namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, readError(missing, err)
		}
		if v, ok := cm.Data[key]; ok {
			return []byte(v), nil
		}
		data = cm.BinaryData
	case "Secret":
		s, err := k.core.Secrets(k.namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, readError(missing, err)
		}
		data = s.Data
	default:
		return nil, fmt.Errorf("%s/%s/%s: kind must be ConfigMap or Secret", kind, k.namespace, name)
	}
	if v, ok := data[key]; ok {
		return v, nil
	}
	return nil, missing
}

func readError(missing *MissingError, err error) error {
	if apierrors.IsNotFound(err) {
		missing.NoObject = true
		return missing
	}
	return fmt.Errorf("read %s/%s/%s: %w", missing.Kind, missing.Namespace, missing.Name, err)
}

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
		out = append(out, "Secret/"+r.Name)
	}
	for _, v := range rel.Spec.ValuesFrom {
		out = append(out, v.Kind+"/"+v.Name)
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

func (e *MissingError) conditionReason() string { return e.Reason }
