package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	helmcli "helm.sh/helm/v4/pkg/cli"
)

func newEnvCommand(streams Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "env",
		Short: "helm client environment information",
		Long: `Env prints out all the environment information in use by berth: the same
variables, read the same way, as 'helm env' prints. HELM_BIN is berth's own
program, and HELM_QPS and HELM_BURST_LIMIT are berth's rate limit (higher than
Helm's unless these variables or --qps and --burst-limit set it).`,
		Args: cobra.MaximumNArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return envKeys(helmSettings(cmd)), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			settings := helmSettings(cmd)
			vars := settings.EnvVars()
			if len(args) == 1 {
				fmt.Fprintln(streams.Out, vars[args[0]])
				return nil
			}
			var b strings.Builder
			for _, k := range envKeys(settings) {
				fmt.Fprintf(&b, "%s=\"%s\"\n", k, vars[k])
			}
			_, err := fmt.Fprint(streams.Out, b.String())
			return err
		},
	}
}

// envKeys are the names of Helm's environment variables, sorted.
func envKeys(settings *helmcli.EnvSettings) []string {
	var keys []string
	for k := range settings.EnvVars() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
