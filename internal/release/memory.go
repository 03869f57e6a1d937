package release

import "k8s.io/client-go/kubernetes/fake"

// NewMemoryStore returns a store of the releases of namespace held in memory for as long as the
// process lives (HELM_DRIVER=memory, and tests). It keeps Secrets in a fake clientset, so records
// are encoded, labelled and queried exactly as in a cluster; use In for other namespaces on the
// same memory.
func NewMemoryStore(namespace string) *HelmStore {
	return NewSecretStore(fake.NewClientset().CoreV1(), namespace)
}
