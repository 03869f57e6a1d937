package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/helmpath"

	"github.com/berthdev/berth/internal/chartpkg"
)

func newCreateCommand(streams Streams) *cobra.Command {
	var starter string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "create a new chart with the given name",
		Long: `
This command creates a chart directory along with the common files and
directories used in a chart.

For example, 'berth create foo' will create a directory structure that looks
something like this:

    foo/
    ├── .helmignore   # Contains patterns to ignore when packaging Helm charts.
    ├── Chart.yaml    # Information about your chart
    ├── values.yaml   # The default values for your templates
    ├── charts/       # Charts that this chart depends on
    └── templates/    # The template files
        └── tests/    # The test files

'berth create' takes a path for an argument. If directories in the given path
do not exist, berth will attempt to create them as it goes. If the given
destination exists and there are files in that directory, conflicting files
will be overwritten, but other files will be left alone.

--starter names a starter in Helm's starters directory ($HELM_DATA_HOME/starters,
as 'helm create' reads it), or gives the path of a starter chart.
`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return nil, cobra.ShellCompDirectiveDefault
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			startersDir := helmpath.DataPath("starters")
			if starter != "" {
				// Before anything is printed or written: a starter that is not there is the
				// user's to fix.
				if _, err := chartpkg.Starter(starter, startersDir); err != nil {
					return explainChartError(err)
				}
			}
			fmt.Fprintf(streams.Out, "Creating %s\n", args[0])
			_, err := chartpkg.Create(args[0], starter, startersDir)
			return explainChartError(err)
		},
	}
	cmd.Flags().StringVarP(&starter, "starter", "p", "", "the name or absolute path to Helm starter scaffold")
	return cmd
}

// explainChartError says what to do about a chart, a starter or a signing key that Create or
// Package refused.
func explainChartError(err error) error {
	var ce *chartpkg.Error
	if !errors.As(err, &ce) {
		return err
	}
	switch ce.Kind {
	case chartpkg.KindNoPath, chartpkg.KindNotChart:
		return &hintedError{err: err, hint: "give the path of a chart directory, one with a Chart.yaml ('berth create NAME' makes one)"}
	case chartpkg.KindNoStarter:
		return &hintedError{err: err, hint: fmt.Sprintf("put the starter chart in %s, or give its path", helmpath.DataPath("starters"))}
	case chartpkg.KindNoKeyring:
		return &hintedError{err: err, hint: "give the keyring that holds the signing key's secret part with --keyring"}
	case chartpkg.KindNoKey:
		return &hintedError{err: err, hint: "give the name (or a part of the name) of a private key in --keyring with --key; list them with 'gpg --list-secret-keys'"}
	}
	return err
}
