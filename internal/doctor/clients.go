package doctor

import (
	"context"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/release"
)

// ClusterOf is what the checks read through clients, and so with their identity: the CLI's
// user's for berth doctor and the CLI's preflight, a Release's ServiceAccount for the
// controller's. store reads the release records (those of the operation, for a preflight).
func ClusterOf(clients *kube.Clients, store release.Store) Cluster {
	return Cluster{
		Dynamic: clients.Dynamic, Metadata: clients.Metadata, Discovery: clients.Client.Discovery(), Mapper: clients.Mapper,
		Backend:  cluster.New(clients.Dynamic, clients.Mapper).WebhookBackend,
		Releases: func(ns string) release.Reader { return store.In(ns) },
		Footprints: func(ctx context.Context, ns string) (*release.Footprints, error) {
			return store.In(ns).Footprints(ctx, ns == "")
		},
		LeaseHolder: func(ctx context.Context, ns, name string) (*release.Holder, bool, error) {
			leases := store.In(ns).Leases()
			if leases == nil {
				return nil, false, nil // a store that keeps no leases: nobody holds one
			}
			return leases.Holder(ctx, name)
		},
	}
}
