package kube

import (
	"net/http"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/internal/testenv"
)

// pathCounter counts the requests made through it, by path.
type pathCounter struct {
	mu    sync.Mutex
	paths map[string]int
	next  http.RoundTripper
}

func (c *pathCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.paths[req.URL.Path]++
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

func (c *pathCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.paths {
		n += v
	}
	return n
}

// TestDiscoveryAsksOnce: the capabilities' version and resources and the mapper's mappings are
// read with one request each of /version, /api and /apis, however often they are read, until
// Reset.
func TestDiscoveryAsksOnce(t *testing.T) {
	env := testenv.New(t)
	counter := &pathCounter{paths: map[string]int{}}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	c, err := NewClients(cfg, env.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	read := func() {
		t.Helper()
		for range 2 {
			if _, err := c.Discovery.Client().ServerVersion(); err != nil {
				t.Fatalf("version: %v", err)
			}
			if _, _, err := c.Discovery.Client().ServerGroupsAndResources(); err != nil {
				t.Fatalf("groups and resources: %v", err)
			}
			if _, err := c.Mapper.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}); err != nil {
				t.Fatalf("map Deployment: %v", err)
			}
		}
	}
	read()
	if got := counter.total(); got != 3 {
		t.Errorf("%d requests, want 3 (/version, /api, /apis): %v", got, counter.paths)
	}
	shared := NewDiscovery(c.Client.Discovery())
	other := c.WithDiscovery(shared)
	if other.Discovery != shared || c.Discovery == shared {
		t.Fatal("WithDiscovery changed the clients it copied, or not the copy")
	}
	c.Mapper.Reset()
	read()
	if got := counter.total(); got != 6 {
		t.Errorf("%d requests after Reset, want 6: %v", got, counter.paths)
	}
}
