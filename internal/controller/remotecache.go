package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/kube"
)

// maxRemoteClients bounds how many clusters' clients the controller keeps between reconciles.
const maxRemoteClients = 32

// remoteKey names the clients of one kubeconfig, as one account, with one dial timeout.
type remoteKey struct {
	Secret       types.NamespacedName
	Version, Key string
	// Account is the ServiceAccount impersonated; empty for the kubeconfig's own identity.
	Account string
	Timeout time.Duration
}

// remoteCache keeps the clients of the clusters Releases release into, so that a reconcile
// reuses the connections of the one before. Clients built from a Secret's former content are
// dropped once its new content is read; the least recently used go beyond maxRemoteClients. Its
// zero value is ready.
type remoteCache struct {
	mu      sync.Mutex
	entries map[remoteKey]*remoteEntry
	tick    uint64
}

type remoteEntry struct {
	clients *kube.Clients
	used    uint64
}

// get returns the clients of k, built by build (which makes no call) when they are not kept.
func (c *remoteCache) get(k remoteKey, build func() (*kube.Clients, error)) (*kube.Clients, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[remoteKey]*remoteEntry{}
	}
	c.tick++
	if e, ok := c.entries[k]; ok {
		e.used = c.tick
		return e.clients, nil
	}
	for old := range c.entries {
		if old.Secret == k.Secret && old.Version != k.Version {
			delete(c.entries, old) // the Secret changed
		}
	}
	clients, err := build()
	if err != nil {
		return nil, err
	}
	if len(c.entries) >= maxRemoteClients {
		c.evict()
	}
	c.entries[k] = &remoteEntry{clients: clients, used: c.tick}
	return clients, nil
}

// last returns the clients last used of the Secret secret as account (whatever its version),
// or nil.
func (c *remoteCache) last(secret types.NamespacedName, account string) *kube.Clients {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out *remoteEntry
	for k, e := range c.entries {
		if k.Secret == secret && k.Account == account && (out == nil || e.used > out.used) {
			out = e
		}
	}
	if out == nil {
		return nil
	}
	return out.clients
}

// evict drops the least recently used entry.
func (c *remoteCache) evict() {
	var oldest remoteKey
	var at uint64
	first := true
	for k, e := range c.entries {
		if first || e.used < at {
			oldest, at, first = k, e.used, false
		}
	}
	delete(c.entries, oldest)
}

// len is how many clients are kept.
func (c *remoteCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
