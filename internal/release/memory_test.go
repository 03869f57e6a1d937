package release

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestMemorySecrets: the memory store's Secrets answer as the API server's do: a UID given on
// create, kept on update; a create of a name taken, and an update or delete of a missing one,
// refused; a delete whose UID precondition names another object refused; lists by namespace and
// labels.
func TestMemorySecrets(t *testing.T) {
	ctx := t.Context()
	m := &memorySecrets{objs: map[string]*corev1.Secret{}}
	a, b := m.Secrets("a"), m.Secrets("b")
	sec := func(name string, l map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	made, err := a.Create(ctx, sec("x", map[string]string{"owner": "helm"}), metav1.CreateOptions{})
	if err != nil || made.UID == "" || made.Namespace != "a" {
		t.Fatalf("create: %v, %v", made, err)
	}
	if _, err := a.Create(ctx, sec("x", nil), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("create of a name taken: %v, want AlreadyExists", err)
	}
	if _, err := b.Create(ctx, sec("x", nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("create of the same name in another namespace: %v", err)
	}
	updated, err := a.Update(ctx, sec("x", map[string]string{"owner": "helm", "status": "deployed"}), metav1.UpdateOptions{})
	if err != nil || updated.UID != made.UID {
		t.Fatalf("update: %v, %v; want UID %s kept", updated, err, made.UID)
	}
	if _, err := a.Update(ctx, sec("y", nil), metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("update of a missing name: %v, want NotFound", err)
	}
	l, err := a.List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,status=deployed"})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "x" {
		t.Fatalf("list: %v, %v", l, err)
	}
	if l, _ := b.List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"}); len(l.Items) != 0 {
		t.Errorf("list of namespace b: %v, want none", l.Items)
	}
	other := types.UID("other")
	if err := a.Delete(ctx, "x", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &other}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with another UID: %v, want Conflict", err)
	}
	if err := a.Delete(ctx, "x", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &made.UID}}); err != nil {
		t.Errorf("delete: %v", err)
	}
	if _, err := a.Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
	if err := a.Delete(ctx, "x", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("delete of a missing name: %v, want NotFound", err)
	}
}
