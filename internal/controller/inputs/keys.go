package inputs

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// MissingError says that a ConfigMap or Secret a Release names, or its key, is not there.
type MissingError struct {
	// Reason is the condition reason the controller gives it (ValuesMissing, ChartMissing,
	// CredentialsMissing, KubeConfigMissing); this package leaves it empty.
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

// KeyReader reads keys of the ConfigMaps and Secrets of a Release's namespace, with the rights
// of the client it is given (the Release's ServiceAccount's).
type KeyReader struct {
	Core      corev1client.CoreV1Interface
	Namespace string
}

// Read returns the content of key in the ConfigMap or Secret kind/name, a *MissingError
// (without Reason and Next) when the object or the key is not there.
func (k KeyReader) Read(ctx context.Context, kind, name, key string) ([]byte, error) {
	missing := &MissingError{Kind: kind, Namespace: k.Namespace, Name: name, Key: key}
	var data map[string][]byte
	switch kind {
	case "ConfigMap":
		cm, err := k.Core.ConfigMaps(k.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, readError(missing, err)
		}
		if v, ok := cm.Data[key]; ok {
			return []byte(v), nil
		}
		data = cm.BinaryData
	case "Secret":
		s, err := k.Core.Secrets(k.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, readError(missing, err)
		}
		data = s.Data
	default:
		return nil, fmt.Errorf("%s/%s/%s: kind must be ConfigMap or Secret", kind, k.Namespace, name)
	}
	if v, ok := data[key]; ok {
		return v, nil
	}
	return nil, missing
}

// Secret returns the Secret name of k's namespace, a *MissingError (naming key, the first key
// wanted; without Reason and Next) when it is not there.
func (k KeyReader) Secret(ctx context.Context, name, key string) (*corev1.Secret, error) {
	s, err := k.Core.Secrets(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, readError(&MissingError{Kind: "Secret", Namespace: k.Namespace, Name: name, Key: key}, err)
	}
	return s, nil
}

func readError(missing *MissingError, err error) error {
	if apierrors.IsNotFound(err) {
		missing.NoObject = true
		return missing
	}
	return fmt.Errorf("read %s/%s/%s: %w", missing.Kind, missing.Namespace, missing.Name, err)
}
