package cli

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/release"
)

// addKubeFlags adds Helm's cluster selection flags, with Helm's names and help text.
func addKubeFlags(flags *pflag.FlagSet) {
	flags.String("kubeconfig", "", "path to the kubeconfig file")
	flags.String("kube-context", "", "name of the kubeconfig context to use")
	flags.StringP("namespace", "n", "", "namespace scope for this request")
	flags.Float32("qps", kube.DefaultQPS, "queries per second used when communicating with the Kubernetes API, not including bursting")
	flags.Int("burst-limit", kube.DefaultBurst, "client-side throttling limit; -1 turns client-side throttling off")
}

// kubeFlags returns the cluster selection flags of the command line cmd runs in.
func kubeFlags(cmd *cobra.Command) kube.Flags {
	get := func(name string) string {
		v, _ := cmd.Flags().GetString(name)
		return v
	}
	qps, _ := cmd.Flags().GetFloat32("qps")
	burst, _ := cmd.Flags().GetInt("burst-limit")
	return kube.Flags{Kubeconfig: get("kubeconfig"), Context: get("kube-context"), Namespace: get("namespace"), QPS: qps, Burst: burst}
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
func releaseStore(ctx context.Context, cmd *cobra.Command) (*release.SecretStore, error) {
	clients, err := loadClients(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return release.NewSecretStore(clients.Client.CoreV1(), clients.Namespace), nil
}
