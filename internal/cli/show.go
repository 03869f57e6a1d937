package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/action"

	"github.com/berthdev/berth/internal/source"
)

type showFlags struct {
	source   source.Options
	jsonPath string
}

func newShowCommand(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "show",
		Aliases: []string{"inspect"},
		Short:   "show information of a chart",
		Long:    "Show information about a chart: a directory, a packaged chart, REPO/CHART, a URL or oci://.",
		Args:    cobra.NoArgs,
	}
	for _, sub := range []struct {
		use, short, long string
		format           action.ShowOutputFormat
	}{
		{"all [CHART]", "show all information of the chart", "displays all its content\n(values.yaml, Chart.yaml, README)", action.ShowAll},
		{"readme [CHART]", "show the chart's README", "displays the contents\nof the README file", action.ShowReadme},
		{"values [CHART]", "show the chart's values", "displays the contents\nof the values.yaml file", action.ShowValues},
		{"chart [CHART]", "show the chart's definition", "displays the contents\nof the Chart.yaml file", action.ShowChart},
		{"crds [CHART]", "show the chart's CRDs", "displays the contents\nof the CustomResourceDefinition files", action.ShowCRDs},
	} {
		cmd.AddCommand(newShowSubcommand(streams, sub.use, sub.short,
			"This command inspects a chart (directory, file, or URL) and "+sub.long, sub.format))
	}
	return cmd
}

func newShowSubcommand(streams Streams, use, short, long string, format action.ShowOutputFormat) *cobra.Command {
	var flags showFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := locateChart(cmd.Context(), cmd, streams, args[0], flags.source)
			if err != nil {
				return err
			}
			show := action.NewShow(format, &action.Configuration{})
			show.JSONPathTemplate = flags.jsonPath
			out, err := show.Run(path)
			if err != nil {
				return fmt.Errorf("show chart %s: %w", args[0], err)
			}
			_, err = fmt.Fprint(streams.Out, out)
			return err
		},
	}
	f := cmd.Flags()
	if format == action.ShowValues {
		f.StringVar(&flags.jsonPath, "jsonpath", "", "supply a JSONPath expression to filter the output")
	}
	addChartSourceFlags(f, &flags.source)
	return cmd
}
