package cli

import (
	"github.com/spf13/cobra"

	"github.com/berthdev/berth/internal/source"
)

func newPushCommand(streams Streams) *cobra.Command {
	var opts source.RegistryOptions
	cmd := &cobra.Command{
		Use:   "push [chart] [remote]",
		Short: "push a chart to remote",
		Long: `Upload a chart to a registry.

The chart is a packaged chart (.tgz); remote is oci://HOST/PATH, and the chart is
pushed as oci://HOST/PATH/NAME:VERSION. If the chart has an associated provenance
file, it will also be uploaded. The credentials of 'berth registry login' or
'helm registry login' are used unless --username and --password are given.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRegistryHint(source.Push(cmd.Context(), helmSettings(cmd), args[0], args[1], opts, streams.Out))
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.CertFile, "cert-file", "", "identify registry client using this SSL certificate file")
	f.StringVar(&opts.KeyFile, "key-file", "", "identify registry client using this SSL key file")
	f.StringVar(&opts.CAFile, "ca-file", "", "verify certificates of HTTPS-enabled servers using this CA bundle")
	f.BoolVar(&opts.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "skip tls certificate checks for the chart upload")
	f.BoolVar(&opts.PlainHTTP, "plain-http", false, "use insecure HTTP connections for the chart upload")
	f.StringVar(&opts.Username, "username", "", "chart repository username where to locate the requested chart")
	f.StringVar(&opts.Password, "password", "", "chart repository password where to locate the requested chart")
	return cmd
}
