package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Namespaces creates, finds and deletes namespaces.
type Namespaces struct {
	Client kubernetes.Interface
}

// Exists reports whether the namespace exists.
func (n Namespaces) Exists(ctx context.Context, name string) (bool, error) {
	_, err := n.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("Namespace/%s: get: %w", name, err)
	}
	return true, nil
}

// Create creates the namespace; one that exists already is fine.
func (n Namespaces) Create(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := n.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("Namespace/%s: create: %w", name, err)
	}
	return nil
}

// Delete deletes the namespace.
func (n Namespaces) Delete(ctx context.Context, name string) error {
	err := n.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("Namespace/%s: delete: %w", name, err)
	}
	return nil
}
