package remotes

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/kube"
)

func TestRemoteCacheDropsWhatASecretHeldBefore(t *testing.T) {
	t.Parallel()
	var c Cache
	builds := 0
	build := func() (*kube.Clients, error) { builds++; return &kube.Clients{}, nil }
	secret := types.NamespacedName{Namespace: "team-a", Name: "kc"}
	v1 := Key{Config: sha256.Sum256([]byte("one"))}
	first, _ := c.Get(secret, "1", v1, build)
	again, _ := c.Get(secret, "1", v1, build)
	if first != again || builds != 1 {
		t.Errorf("the same kubeconfig built %d times, want once and its clients reused", builds)
	}
	as := v1
	as.Namespace, as.Account = "team-a", "deployer"
	if _, err := c.Get(secret, "1", as, build); err != nil || builds != 2 || c.len() != 2 {
		t.Errorf("another account: %d builds, %d kept, want 2 and 2", builds, c.len())
	}
	if c.Last(secret, "team-a", "deployer") == nil || c.Last(secret, "", "") != first {
		t.Error("the clients last used of the Secret are not found")
	}
	v2 := Key{Config: sha256.Sum256([]byte("two"))}
	if _, err := c.Get(secret, "2", v2, build); err != nil || c.len() != 1 {
		t.Errorf("after the Secret changed, %d clients kept, want only the new one", c.len())
	}
	if _, err := c.Get(secret, "2", v2, func() (*kube.Clients, error) { return nil, errors.New("refused") }); err != nil {
		t.Errorf("kept clients were built again: %v", err)
	}
}

// TestRemoteCacheSharesAKubeconfigOfManySecrets checks that Secrets of many namespaces that hold
// one kubeconfig share its clients (each account its own), and that a change of one of them
// leaves the clients the others hold.
func TestRemoteCacheSharesAKubeconfigOfManySecrets(t *testing.T) {
	t.Parallel()
	var c Cache
	builds := 0
	build := func() (*kube.Clients, error) { builds++; return &kube.Clients{}, nil }
	same := Key{Config: sha256.Sum256([]byte("fleet"))}
	for i := range 3 * maxRemoteClients {
		secret := types.NamespacedName{Namespace: fmt.Sprintf("team-%d", i), Name: "kc"}
		if _, err := c.Get(secret, "1", same, build); err != nil {
			t.Fatal(err)
		}
	}
	if builds != 1 || c.len() != 1 {
		t.Fatalf("%d Secrets of one kubeconfig: %d builds, %d kept; want one", 3*maxRemoteClients, builds, c.len())
	}
	as := same
	as.Namespace, as.Account = "team-1", "deployer"
	c.Get(types.NamespacedName{Namespace: "team-1", Name: "kc"}, "1", as, build)
	as.Namespace = "team-2"
	c.Get(types.NamespacedName{Namespace: "team-2", Name: "kc"}, "1", as, build)
	if builds != 3 {
		t.Errorf("an account of each of two namespaces: %d builds, want 3", builds)
	}
	changed := types.NamespacedName{Namespace: "team-0", Name: "kc"}
	if _, err := c.Get(changed, "2", Key{Config: sha256.Sum256([]byte("other"))}, build); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(types.NamespacedName{Namespace: "team-5", Name: "kc"}, "1", same, build); err != nil || builds != 4 {
		t.Errorf("one Secret changed: %d builds, want the others' clients kept", builds)
	}
}

func TestRemoteCacheIsBounded(t *testing.T) {
	t.Parallel()
	var c Cache
	build := func() (*kube.Clients, error) { return &kube.Clients{}, nil }
	get := func(i int) (*kube.Clients, error) {
		return c.Get(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("kc-%d", i)}, "1", Key{Config: sha256.Sum256(fmt.Appendf(nil, "config %d", i))}, build)
	}
	for i := range maxRemoteClients + 10 {
		if _, err := get(i); err != nil {
			t.Fatal(err)
		}
		get(0) // the first is used all along
	}
	if c.len() != maxRemoteClients {
		t.Errorf("%d clients kept, want %d", c.len(), maxRemoteClients)
	}
	built := false
	build = func() (*kube.Clients, error) { built = true; return &kube.Clients{}, nil }
	get(0)
	if built {
		t.Error("the most used clients were evicted")
	}
	if c.Last(types.NamespacedName{Namespace: "ns", Name: "kc-1"}, "", "") != nil {
		t.Error("the clients of an evicted kubeconfig are still found by its Secret")
	}
}
