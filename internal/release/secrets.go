package release

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// ctxSecrets binds a context to the Secret calls Helm's driver makes with context.Background(),
// so that every storage call is cancelled with the operation that made it.
type ctxSecrets struct {
	typedcorev1.SecretInterface
	ctx context.Context
}

func (s ctxSecrets) Get(_ context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	return s.SecretInterface.Get(s.ctx, name, opts)
}

func (s ctxSecrets) List(_ context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	return s.SecretInterface.List(s.ctx, opts)
}

func (s ctxSecrets) Create(_ context.Context, secret *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error) {
	return s.SecretInterface.Create(s.ctx, secret, opts)
}

func (s ctxSecrets) Update(_ context.Context, secret *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error) {
	return s.SecretInterface.Update(s.ctx, secret, opts)
}

func (s ctxSecrets) Delete(_ context.Context, name string, opts metav1.DeleteOptions) error {
	return s.SecretInterface.Delete(s.ctx, name, opts)
}

// ctxConfigMaps does for the ConfigMap calls of Helm's configmap driver what ctxSecrets does.
type ctxConfigMaps struct {
	typedcorev1.ConfigMapInterface
	ctx context.Context
}

func (c ctxConfigMaps) Get(_ context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	return c.ConfigMapInterface.Get(c.ctx, name, opts)
}

func (c ctxConfigMaps) List(_ context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error) {
	return c.ConfigMapInterface.List(c.ctx, opts)
}

func (c ctxConfigMaps) Create(_ context.Context, cm *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error) {
	return c.ConfigMapInterface.Create(c.ctx, cm, opts)
}

func (c ctxConfigMaps) Update(_ context.Context, cm *corev1.ConfigMap, opts metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	return c.ConfigMapInterface.Update(c.ctx, cm, opts)
}

func (c ctxConfigMaps) Delete(_ context.Context, name string, opts metav1.DeleteOptions) error {
	return c.ConfigMapInterface.Delete(c.ctx, name, opts)
}
