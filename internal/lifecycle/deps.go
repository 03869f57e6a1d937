package lifecycle

import (
	"context"

	"helm.sh/helm/v4/pkg/chart/common"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/release"
)

// NewDeps returns the collaborators of operations on the releases of clients.Namespace, made with
// clients (and so with their identity), run by holder; events, which may be nil, is told of the
// engine's progress.
func NewDeps(clients *kube.Clients, holder release.Holder, events func(engine.Event)) Deps {
	return Deps{
		Cluster:    cluster.New(clients.Dynamic, clients.Mapper).WithPodLogs(clients.Client.CoreV1()).WithMetadata(clients.Metadata).WithDiscovery(clients.Client.Discovery()),
		Store:      release.NewSecretStore(clients.Client.CoreV1(), clients.Namespace),
		Namespaces: cluster.Namespaces{Client: clients.Client},
		Events:     events,
		Lookup:     clients.Config,
		Leases:     release.NewLeases(clients.Client.CoordinationV1(), clients.Namespace),
		Journals:   release.NewJournals(clients.Client.CoreV1(), clients.Namespace),
		Holder:     holder,
	}
}

// Capabilities returns the capabilities of the cluster of clients (its version and the API
// versions it serves), for rendering.
func Capabilities(ctx context.Context, clients *kube.Clients) (*common.Capabilities, error) {
	kubeVersion, apiVersions, err := cluster.ServerCapabilities(ctx, clients.Client.Discovery())
	if err != nil {
		return nil, err
	}
	caps, err := chart.Capabilities(kubeVersion, nil)
	if err != nil {
		return nil, err
	}
	caps.APIVersions = common.VersionSet(apiVersions)
	return caps, nil
}
