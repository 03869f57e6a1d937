package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/source"
)

type pullFlags struct {
	source source.Options
	pull   source.PullOptions
}

func newPullCommand(streams Streams) *cobra.Command {
	var flags pullFlags
	cmd := &cobra.Command{
		Use:     "pull [chart URL | repo/chartname] [...]",
		Aliases: []string{"fetch"},
		Short:   "download a chart from a repository and (optionally) unpack it in local directory",
		Long: `Retrieve a package from a package repository, and download it locally.

This is useful for fetching packages to inspect, modify, or repackage. It can
also be used to perform cryptographic verification of a chart without installing
the chart.

There are options for unpacking the chart after download. This will create a
directory for the chart and uncompress into that directory.

If the --verify flag is specified, the requested chart MUST have a provenance
file, and MUST pass the verification process. Failure in any part of this will
result in an error, and the chart will not be saved locally.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := newResolver(cmd, streams, flags.source)
			if err != nil {
				return err
			}
			for _, ref := range args {
				out, proof, err := r.PullVerified(cmd.Context(), ref, flags.pull)
				if err != nil {
					return explainSourceError(err)
				}
				fmt.Fprint(streams.Out, out)
				if proof != nil && proof.Provider != release.ProviderPGP {
					// Helm's report says what a PGP verification found; cosign's is berth's.
					fmt.Fprint(streams.Out, signatureReport(proof))
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&flags.source.Devel, "devel", false, "use development versions, too. Equivalent to version '>0.0.0-0'. If --version is set, this is ignored.")
	f.BoolVar(&flags.pull.Untar, "untar", false, "if set to true, will untar the chart after downloading it")
	f.BoolVar(&flags.pull.Prov, "prov", false, "fetch the provenance file, but don't perform verification")
	f.StringVar(&flags.pull.UntarDir, "untardir", ".", "if untar is specified, this flag specifies the name of the directory into which the chart is expanded")
	f.StringVarP(&flags.pull.DestDir, "destination", "d", ".", "location to write the chart. If this and untardir are specified, untardir is appended to this")
	addChartPathFlags(f, &flags.source)
	return cmd
}
