package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berthdev/berth/internal/version"
)

type versionFlags struct {
	output string
}

func newVersionCommand(streams Streams) *cobra.Command {
	var flags versionFlags
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of berth",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(streams, flags.output, version.Get())
		},
	}
	cmd.Flags().StringVarP(&flags.output, "output", "o", "text", "output format: text or json")
	return cmd
}

func printVersion(streams Streams, output string, info version.Info) error {
	switch output {
	case "text", "":
		_, err := fmt.Fprintln(streams.Out, info.String())
		return err
	case "json":
		enc := json.NewEncoder(streams.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	default:
		return fmt.Errorf("unknown output format %q: use text or json", output)
	}
}
