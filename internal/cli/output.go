package cli

import (
	"strings"

	"github.com/spf13/cobra"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/cli/output"

	"github.com/berthdev/berth/internal/release"
)

// addOutputFlag adds Helm's -o/--output flag (table, json or yaml; table by default).
func addOutputFlag(cmd *cobra.Command, format *output.Format) {
	*format = output.Table
	cmd.Flags().VarP((*outputValue)(format), "output", "o",
		"prints the output in the specified format. Allowed values: "+strings.Join(output.Formats(), ", "))
}

type outputValue output.Format

func (o *outputValue) String() string { return string(*o) }

func (o *outputValue) Type() string { return "format" }

func (o *outputValue) Set(s string) error {
	format, err := output.ParseFormat(s)
	if err != nil {
		return err
	}
	*o = outputValue(format)
	return nil
}

// chartName prints a release's chart as Helm does: NAME-VERSION, or MISSING.
func chartName(c *chart.Chart) string { return release.ChartName(c) }

// appVersion prints a release's chart's app version as Helm does, or MISSING.
func appVersion(c *chart.Chart) string { return release.AppVersion(c) }
