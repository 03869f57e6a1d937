package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/downloader"

	"github.com/berthdev/berth/internal/source"
)

func newDependencyCommand(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "dependency update|build|list",
		Aliases: []string{"dep", "dependencies"},
		Short:   "manage a chart's dependencies",
		Long: `Manage the dependencies of a chart, as helm dependency does.

Helm charts store their dependencies in 'charts/' and declare them in
'Chart.yaml' (name, version or range, and repository: a URL, an alias of an
added repository as '@NAME' or 'alias:NAME', oci://, or file://PATH).
'update' resolves them and writes 'Chart.lock'; 'build' rebuilds 'charts/'
from 'Chart.lock'; 'list' shows them and whether they are there.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newDependencyListCommand(streams))
	cmd.AddCommand(newDependencyUpdateCommand(streams, false))
	cmd.AddCommand(newDependencyUpdateCommand(streams, true))
	return cmd
}

func newDependencyListCommand(streams Streams) *cobra.Command {
	client := action.NewDependency()
	cmd := &cobra.Command{
		Use:     "list CHART",
		Aliases: []string{"ls"},
		Short:   "list the dependencies for the given chart",
		Long: `List all of the dependencies declared in a chart.

This can take chart archives and chart directories as input. It will not alter
the contents of a chart.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return client.List(chartDirArg(args), streams.Out)
		},
	}
	cmd.Flags().UintVar(&client.ColumnWidth, "max-col-width", 80, "maximum column width for output table")
	return cmd
}

// newDependencyUpdateCommand returns `dependency update`, or `dependency build` when build.
func newDependencyUpdateCommand(streams Streams, build bool) *cobra.Command {
	var opts source.DependencyOptions
	cmd := &cobra.Command{
		Use:     "update CHART",
		Aliases: []string{"up"},
		Short:   "update charts/ based on the contents of Chart.yaml",
		Long: `Update the on-disk dependencies to mirror Chart.yaml.

This command verifies that the required charts, as expressed in 'Chart.yaml',
are present in 'charts/' and are at an acceptable version. It will pull down
the latest charts that satisfy the dependencies, and clean up old dependencies.

On successful update, this will generate a lock file that can be used to
rebuild the dependencies to an exact version.

--username and --password go to the OCI registry the dependencies come from,
and to no other host: dependencies from more than one registry need
'berth registry login HOST' for each instead. A chart repository gets the
credentials it was added with. Every download is bounded in time and stops
at Ctrl-C.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := newResolver(cmd, Streams{In: streams.In, Out: streams.Out, ErrOut: streams.Out}, source.Options{})
			if err != nil {
				return err
			}
			mode := source.DependencyUpdate
			if build {
				mode = source.DependencyBuild
			}
			return explainDependencyError(r.Dependencies(cmd.Context(), chartDirArg(args), opts, mode))
		},
	}
	if build {
		cmd.Use, cmd.Aliases = "build CHART", nil
		cmd.Short = "rebuild the charts/ directory based on the Chart.lock file"
		cmd.Long = `Build out the charts/ directory from the Chart.lock file.

Build is used to reconstruct a chart's dependencies to the state specified in
the lock file. This will not re-negotiate dependencies, as 'berth dependency update'
does.

If no lock file is found, 'berth dependency build' will mirror the behavior
of 'berth dependency update'.

--username and --password go to the OCI registry the dependencies come from,
and to no other host: dependencies from more than one registry need
'berth registry login HOST' for each instead. A chart repository gets the
credentials it was added with. Every download is bounded in time and stops
at Ctrl-C.`
	}
	addDependencyFlags(cmd.Flags(), &opts)
	return cmd
}

func addDependencyFlags(f *pflag.FlagSet, o *source.DependencyOptions) {
	f.BoolVar(&o.Verify, "verify", false, "verify the packages against signatures")
	f.StringVar(&o.Keyring, "keyring", defaultKeyring(), "keyring containing public keys")
	f.BoolVar(&o.SkipRefresh, "skip-refresh", false, "do not refresh the local repository cache")
	f.StringVar(&o.Username, "username", "", "username of the OCI registry the dependencies come from")
	f.StringVar(&o.Password, "password", "", "password of the OCI registry the dependencies come from")
	f.StringVar(&o.CertFile, "cert-file", "", "identify HTTPS client using this SSL certificate file")
	f.StringVar(&o.KeyFile, "key-file", "", "identify HTTPS client using this SSL key file")
	f.BoolVar(&o.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "skip tls certificate checks for the chart download")
	f.BoolVar(&o.PlainHTTP, "plain-http", false, "use insecure HTTP connections for the chart download")
	f.StringVar(&o.CaFile, "ca-file", "", "verify certificates of HTTPS-enabled servers using this CA bundle")
}

// chartDirArg is the chart argument of the dependency commands: the current directory when
// none is given.
func chartDirArg(args []string) string {
	if len(args) == 0 {
		return "."
	}
	return filepath.Clean(args[0])
}

// explainDependencyError says what to do when a dependency's repository is not added, or the
// credentials given are for more than one registry.
func explainDependencyError(err error) error {
	var (
		notFound downloader.ErrRepoNotFound
		hosts    *source.CredentialsHostsError
	)
	switch {
	case errors.As(err, &notFound):
		return fmt.Errorf("%w: add the missing repositories with `berth repo add NAME URL`", err)
	case errors.As(err, &hosts):
		return &hintedError{err: err, hint: "--username and --password go to one registry only: log in to each with `berth registry login HOST` and run again without them"}
	}
	return err
}
