package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	helmcli "helm.sh/helm/v4/pkg/cli"

	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/release"
)

// kubeFlags returns the cluster selection of the command line cmd runs in: Helm's --kube-* flags,
// -n and the HELM_* variables behind them, read through Helm's settings.
func kubeFlags(cmd *cobra.Command) kube.Flags {
	return kubeFlagsOf(helmSettings(cmd), cmd)
}

func kubeFlagsOf(s *helmcli.EnvSettings, cmd *cobra.Command) kube.Flags {
	// Helm's settings resolve the namespace through the kubeconfig; berth does that itself,
	// naming the kubeconfig when it cannot be read, so only an explicit namespace is taken.
	// The flag's default is HELM_NAMESPACE.
	ns, _ := cmd.Flags().GetString("namespace")
	return kube.Flags{
		Kubeconfig: s.KubeConfig, Context: s.KubeContext, Namespace: ns,
		APIServer: s.KubeAPIServer, Token: s.KubeToken, AsUser: s.KubeAsUser, AsGroups: s.KubeAsGroups,
		CAFile: s.KubeCaFile, TLSServerName: s.KubeTLSServerName, InsecureSkipTLSVerify: s.KubeInsecureSkipTLSVerify,
		QPS: s.QPS, Burst: s.BurstLimit,
	}
}

// loadClients builds the clients the flags select and checks that the cluster answers.
func loadClients(ctx context.Context, cmd *cobra.Command) (*kube.Clients, error) {
	clients, err := kubeFlags(cmd).Load()
	if err != nil {
		return nil, err
	}
	if err := clients.Reachable(ctx); err != nil {
		return nil, err
	}
	return clients, nil
}

// releaseStore returns the release store of the namespace the flags select.
func releaseStore(ctx context.Context, cmd *cobra.Command) (release.Store, error) {
	clients, err := loadClients(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return storeOf(clients)
}

// storeOf returns the release store of clients' namespace on the storage driver HELM_DRIVER
// names (Secrets by default), as helm chooses it.
func storeOf(clients *kube.Clients) (release.Store, error) {
	driver, err := release.ParseDriver(os.Getenv("HELM_DRIVER"))
	if err != nil {
		return nil, fmt.Errorf("HELM_DRIVER: %w", err)
	}
	return release.Open(driver, clients.Client, clients.Namespace, release.DefaultExpansion(), nil)
}
