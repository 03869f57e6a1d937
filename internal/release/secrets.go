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
