// Package remotes keeps the clients of the remote clusters Releases release into, between
// reconciles, bounded, and dropped when the Secret that held their kubeconfig changes. It needs
// nothing of the controller's.
package remotes

import (
	"crypto/sha256"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/kube"
)

// maxRemoteClients bounds how many clusters' clients the controller keeps between reconciles.
const maxRemoteClients = 32

// Key names the clients of one kubeconfig, as one account, with one dial timeout. It names
// the kubeconfig by its content, so that the Releases of many namespaces whose Secrets hold the
// same kubeconfig (a copy in each tenant's namespace) share the clients, as they share the
// identity and its rights.
type Key struct {
	Config [sha256.Size]byte
	// Namespace and Account are the ServiceAccount impersonated; empty for the kubeconfig's own
	// identity.
	Namespace, Account string
	Timeout            time.Duration
}

// remoteSecret is what the cache last read of one Secret: its resourceVersion and the kubeconfig
// it held.
type remoteSecret struct {
	version string
	config  [sha256.Size]byte
}

// Cache keeps the clients of the clusters Releases release into, so that a reconcile
// reuses the connections of the one before. Clients built from what a Secret held before are
// dropped once its new content is read, unless another Secret still holds that kubeconfig; the
// least recently used go beyond maxRemoteClients. Its zero value is ready.
type Cache struct {
	mu      sync.Mutex
	entries map[Key]*remoteEntry
	secrets map[types.NamespacedName]remoteSecret
	tick    uint64
}

type remoteEntry struct {
	clients *kube.Clients
	used    uint64
}

// Get returns the clients of k, read from secret at version, built by build (which makes no
// call) when they are not kept.
func (c *Cache) Get(secret types.NamespacedName, version string, k Key, build func() (*kube.Clients, error)) (*kube.Clients, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[Key]*remoteEntry{}
		c.secrets = map[types.NamespacedName]remoteSecret{}
	}
	c.tick++
	if before, ok := c.secrets[secret]; ok && before.version != version {
		delete(c.secrets, secret)
		if before.config != k.Config && !c.held(before.config) {
			c.drop(before.config) // the Secret changed, and no other holds what it held
		}
	}
	e, ok := c.entries[k]
	if !ok {
		clients, err := build()
		if err != nil {
			return nil, err
		}
		if len(c.entries) >= maxRemoteClients {
			c.evict()
		}
		e = &remoteEntry{clients: clients}
		c.entries[k] = e
	}
	e.used = c.tick
	c.secrets[secret] = remoteSecret{version: version, config: k.Config}
	return e.clients, nil
}

// held says a Secret the cache read holds the kubeconfig config.
func (c *Cache) held(config [sha256.Size]byte) bool {
	for _, s := range c.secrets {
		if s.config == config {
			return true
		}
	}
	return false
}

// drop removes the clients of the kubeconfig config, whatever their account.
func (c *Cache) drop(config [sha256.Size]byte) {
	for k := range c.entries {
		if k.Config == config {
			delete(c.entries, k)
		}
	}
}

// Last returns the clients last used of what Secret secret held when last read, acting as
// account of namespace (both empty: as the kubeconfig's identity), or nil.
func (c *Cache) Last(secret types.NamespacedName, namespace, account string) *kube.Clients {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.secrets[secret]
	if !ok {
		return nil
	}
	var out *remoteEntry
	for k, e := range c.entries {
		if k.Config == s.config && k.Namespace == namespace && k.Account == account && (out == nil || e.used > out.used) {
			out = e
		}
	}
	if out == nil {
		return nil
	}
	return out.clients
}

// evict drops the least recently used entry, and forgets the Secrets that held its kubeconfig
// when no clients of it are left.
func (c *Cache) evict() {
	var oldest Key
	var at uint64
	first := true
	for k, e := range c.entries {
		if first || e.used < at {
			oldest, at, first = k, e.used, false
		}
	}
	delete(c.entries, oldest)
	for k := range c.entries {
		if k.Config == oldest.Config {
			return
		}
	}
	for name, s := range c.secrets {
		if s.config == oldest.Config {
			delete(c.secrets, name)
		}
	}
}

// len is how many clients are kept.
func (c *Cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
