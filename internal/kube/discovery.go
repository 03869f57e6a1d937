package kube

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// Discovery is what one API server says it serves, asked once and kept until it is reset: its
// version, its groups and resources, and the REST mapping made of them. Capabilities and the
// mapper read the same answers, so that an operation asks discovery once, not once for each.
// It is safe for concurrent use.
type Discovery struct {
	cached *versionCache
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// NewDiscovery returns the discovery of the API server d asks, which asks nothing until it is
// read, within DefaultDiscoveryLimits.
func NewDiscovery(d discovery.DiscoveryInterfaces) *Discovery {
	return NewDiscoveryWithin(d, DefaultDiscoveryLimits())
}

// NewDiscoveryWithin is NewDiscovery within limits: more group versions than they allow, or
// more bytes when d's clients count them (NewClients), fail with a *DiscoveryTooLargeError.
func NewDiscoveryWithin(d discovery.DiscoveryInterfaces, limits DiscoveryLimits) *Discovery {
	bounded := boundDiscovery(d, limits)
	cached := &versionCache{CachedDiscoveryInterface: memory.NewMemCacheClient(bounded), reset: time.Now()}
	return &Discovery{cached: cached, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}
}

// Client is the discovery client that answers from what is kept.
func (d *Discovery) Client() discovery.CachedDiscoveryInterface { return d.cached }

// Mapper is the REST mapper made of what is kept; its Reset resets d.
func (d *Discovery) Mapper() meta.ResettableRESTMapper { return d.mapper }

// ServerVersion is the API server's version, asked on first use.
func (d *Discovery) ServerVersion(ctx context.Context) (*version.Info, error) {
	return d.cached.ServerVersionWithContext(ctx)
}

// Reset forgets what was kept: the next read asks the API server again.
func (d *Discovery) Reset() { d.mapper.Reset() }

// ResetOlderThan resets d when it was last reset more than age ago, so that what others change
// in the cluster (a CRD installed by another tool) is seen within age.
func (d *Discovery) ResetOlderThan(age time.Duration) {
	if d.cached.resetBefore(time.Now().Add(-age)) {
		d.Reset()
	}
}

// versionCache keeps the server's version beside the groups and resources its embedded cache
// keeps (client-go's memory cache asks the version every time), forgotten with them.
type versionCache struct {
	discovery.CachedDiscoveryInterface
	mu      sync.Mutex
	version *version.Info
	reset   time.Time
}

func (c *versionCache) ServerVersion() (*version.Info, error) {
	return c.ServerVersionWithContext(context.Background())
}

func (c *versionCache) ServerVersionWithContext(ctx context.Context) (*version.Info, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != nil {
		return c.version, nil
	}
	v, err := discovery.ToServerVersionInterfaceWithContext(c.CachedDiscoveryInterface).ServerVersionWithContext(ctx)
	if err != nil {
		return nil, err
	}
	c.version = v
	return v, nil
}

func (c *versionCache) Invalidate() {
	c.mu.Lock()
	c.version, c.reset = nil, time.Now()
	c.mu.Unlock()
	c.CachedDiscoveryInterface.Invalidate()
}

func (c *versionCache) InvalidateWithContext(ctx context.Context) { c.Invalidate() }

// resetBefore says c was last reset before t.
func (c *versionCache) resetBefore(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reset.Before(t)
}
