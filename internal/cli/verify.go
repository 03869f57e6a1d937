package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/action"
)

func newVerifyCommand(streams Streams) *cobra.Command {
	client := action.NewVerify()
	cmd := &cobra.Command{
		Use:   "verify PATH",
		Short: "verify that a chart at the given path has been signed and is valid",
		Long: `
Verify that the given chart has a valid provenance file.

Provenance files provide cryptographic verification that a chart has not been
tampered with, and was packaged by a trusted provider.

This command can be used to verify a local chart. Several other commands provide
'--verify' flags that run the same validation. To generate a signed package, use
the 'berth package --sign' command.
`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return nil, cobra.ShellCompDirectiveDefault
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			out, err := client.Run(args[0])
			if err != nil {
				return fmt.Errorf("verify %s: %w", args[0], err)
			}
			fmt.Fprint(streams.Out, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&client.Keyring, "keyring", defaultKeyring(), "keyring containing public keys")
	return cmd
}
