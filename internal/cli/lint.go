package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"

	"github.com/berthdev/berth/internal/chart"
)

type lintFlags struct {
	values      chart.ValueOptions
	kubeVersion string
}

func newLintCommand(streams Streams) *cobra.Command {
	client := action.NewLint()
	var flags lintFlags
	cmd := &cobra.Command{
		Use:   "lint PATH",
		Short: "examine a chart for possible issues",
		Long: `
This command takes a path to a chart and runs a series of tests to verify that
the chart is well-formed.

If the linter encounters things that will cause the chart to fail installation,
it will emit [ERROR] messages. If it encounters issues that break with convention
or recommendation, it will emit [WARNING] messages.
`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if flags.kubeVersion != "" {
				v, err := common.ParseKubeVersion(flags.kubeVersion)
				if err != nil {
					return fmt.Errorf("invalid kube version '%s': %w", flags.kubeVersion, err)
				}
				client.KubeVersion = v
			}
			vals, err := flags.values.Merge()
			if err != nil {
				return err
			}
			client.Namespace = helmSettings(cmd).Namespace()
			paths := args
			if client.WithSubcharts {
				paths = withSubcharts(paths)
			}
			return lint(streams.Out, client, paths, vals)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&client.Strict, "strict", false, "fail on lint warnings")
	f.BoolVar(&client.WithSubcharts, "with-subcharts", false, "lint dependent charts")
	f.BoolVar(&client.Quiet, "quiet", false, "print only warnings and errors")
	f.BoolVar(&client.SkipSchemaValidation, "skip-schema-validation", false, "if set, disables JSON schema validation")
	f.StringVar(&flags.kubeVersion, "kube-version", "", "Kubernetes version used for capabilities and deprecation checks")
	addValueFlags(cmd, &flags.values)
	return cmd
}

// lint lints each chart of paths with Helm's linter and prints what it found as helm lint does;
// it fails, with helm's summary, when a chart did not pass.
func lint(out io.Writer, client *action.Lint, paths []string, vals map[string]any) error {
	var b strings.Builder
	failed, flagged := 0, 0
	for _, path := range paths {
		result := client.Run([]string{path}, vals)
		found := action.HasWarningsOrErrors(result)
		if found {
			flagged++
		}
		if client.Quiet && !found {
			continue
		}
		fmt.Fprintf(&b, "==> Linting %s\n", path)
		// A chart that failed to lint at all has errors and no messages.
		if len(result.Messages) == 0 {
			for _, err := range result.Errors {
				fmt.Fprintf(&b, "Error %s\n", err)
			}
		}
		for _, msg := range result.Messages {
			if !client.Quiet || msg.Severity > support.InfoSev {
				fmt.Fprintf(&b, "%s\n", msg)
			}
		}
		if len(result.Errors) != 0 {
			failed++
		}
		b.WriteString("\n")
	}
	fmt.Fprint(out, b.String())
	summary := fmt.Sprintf("%d chart(s) linted, %d chart(s) failed", len(paths), failed)
	if failed > 0 {
		return errors.New(summary)
	}
	if !client.Quiet || flagged > 0 {
		fmt.Fprintln(out, summary)
	}
	return nil
}

// withSubcharts is paths followed by the charts in the charts/ directory of each, at any depth:
// directories with a Chart.yaml and archives, as helm lint --with-subcharts finds them.
func withSubcharts(paths []string) []string {
	out := paths[:len(paths):len(paths)]
	for _, p := range paths {
		_ = filepath.WalkDir(filepath.Join(p, "charts"), func(path string, d fs.DirEntry, _ error) error {
			switch {
			case d == nil:
			case d.Name() == "Chart.yaml":
				out = append(out, filepath.Dir(path))
			case strings.HasSuffix(path, ".tgz"), strings.HasSuffix(path, ".tar.gz"):
				out = append(out, path)
			}
			return nil
		})
	}
	return out
}
