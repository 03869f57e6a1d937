package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"
	helmcli "helm.sh/helm/v4/pkg/cli"

	"github.com/berthdev/berth/internal/kube"
)

// settingsKey is the context key of the command line's Helm settings.
type settingsKey struct{}

// newSettings reads Helm's environment (HELM_* variables and Helm's paths) through Helm's SDK, as
// helm does. berth's client-side rate limit is higher than Helm's (see kube.DefaultQPS) unless
// HELM_QPS or HELM_BURST_LIMIT say otherwise.
func newSettings(getenv func(string) string) *helmcli.EnvSettings {
	s := helmcli.New()
	if getenv("HELM_QPS") == "" {
		s.QPS = kube.DefaultQPS
	}
	if getenv("HELM_BURST_LIMIT") == "" {
		s.BurstLimit = kube.DefaultBurst
	}
	return s
}

// withSettings gives the commands run with ctx the settings s.
func withSettings(ctx context.Context, s *helmcli.EnvSettings) context.Context {
	return context.WithValue(ctx, settingsKey{}, s)
}

// helmSettings returns the Helm settings of the command line cmd runs in: Helm's environment
// overridden by its global flags (--kube-context, --repository-config, --registry-config, ...).
func helmSettings(cmd *cobra.Command) *helmcli.EnvSettings {
	if s, ok := cmd.Context().Value(settingsKey{}).(*helmcli.EnvSettings); ok {
		return s
	}
	return newSettings(os.Getenv)
}
