package release

import "k8s.io/client-go/kubernetes/fake"

// NewMemoryStore returns a store of the releases of namespace held in memory, for tests. It is a
// SecretStore over a fake clientset, so records are encoded, labelled and queried exactly as in a
// cluster; use In for other namespaces on the same memory.
func NewMemoryStore(namespace string) *SecretStore {
	return NewSecretStore(fake.NewClientset().CoreV1(), namespace)
}
