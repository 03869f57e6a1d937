package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/cli/output"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/valuemask"
)

func newGetCommand(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get",
		Short: "download extended information of a named release",
		Long: `This command consists of multiple subcommands which can be used to
get extended information about the release, including:

- The values used to generate the release
- The generated manifest file
- The notes provided by the chart of the release
- The hooks associated with the release
- The metadata of the release`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(
		newGetPartCommand(streams, "manifest", "download the manifest for a named release",
			`This command fetches the generated manifest for a given release.

A manifest is a YAML-encoded representation of the Kubernetes resources that
were generated from this release's chart(s). If a chart is dependent on other
charts, those resources will also be included in the manifest.`, writeManifest),
		newGetPartCommand(streams, "notes", "download the notes for a named release",
			"This command shows notes provided by the chart of a named release.", writeNotes),
		newGetPartCommand(streams, "hooks", "download all hooks for a named release",
			`This command downloads hooks for a given release.

Hooks are formatted in YAML and separated by the YAML '---\n' separator.`, writeHooks),
		newGetValuesCommand(streams),
		newGetMetadataCommand(streams),
		newGetAllCommand(streams),
	)
	return cmd
}

// newGetPartCommand builds a get subcommand that prints one part of a revision.
func newGetPartCommand(streams Streams, part, short, long string, write func(io.Writer, *release.Release) error) *cobra.Command {
	var revision int
	cmd := &cobra.Command{
		Use:               part + " RELEASE_NAME",
		Short:             short,
		Long:              long,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeReleaseName,
		RunE: func(cmd *cobra.Command, args []string) error {
			rel, err := lookupRelease(cmd, args[0], revision)
			if err != nil {
				return err
			}
			return write(streams.Out, rel)
		},
	}
	cmd.Flags().IntVar(&revision, "revision", 0, "get the named release with revision")
	completeRevisionFlag(cmd)
	return cmd
}

func lookupRelease(cmd *cobra.Command, name string, revision int) (*release.Release, error) {
	store, err := releaseStore(cmd.Context(), cmd)
	if err != nil {
		return nil, err
	}
	return release.Lookup(cmd.Context(), store, name, revision)
}

func writeManifest(out io.Writer, rel *release.Release) error {
	_, err := fmt.Fprintln(out, rel.Manifest)
	return err
}

func writeNotes(out io.Writer, rel *release.Release) error {
	if rel.Info.Notes == "" {
		return nil
	}
	_, err := fmt.Fprintf(out, "NOTES:\n%s\n", rel.Info.Notes)
	return err
}

func writeHooks(out io.Writer, rel *release.Release) error {
	var b strings.Builder
	for _, h := range rel.Hooks {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

type getValuesFlags struct {
	revision int
	all      bool
	reveal   bool
	output   output.Format
}

func newGetValuesCommand(streams Streams) *cobra.Command {
	var flags getValuesFlags
	cmd := &cobra.Command{
		Use:   "values RELEASE_NAME",
		Short: "download the values file for a named release",
		Long: `This command downloads a values file for a given release.

A value that came from a values file encrypted with SOPS is shown as ` + valuemask.Mask + `
(a map or a list there masked whole), in every output format, unless
--reveal-secrets is given.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeReleaseName,
		RunE: func(cmd *cobra.Command, args []string) error {
			rel, err := lookupRelease(cmd, args[0], flags.revision)
			if err != nil {
				return err
			}
			vals := rel.Config
			if flags.all {
				if vals, err = util.CoalesceValues(rel.Chart, rel.Config); err != nil {
					return fmt.Errorf("release %s/%s: compute values of revision %d: %w", rel.Namespace, rel.Name, rel.Version, err)
				}
			}
			vals = maskValues(rel, vals, flags.reveal)
			return flags.output.Write(streams.Out, valuesWriter{vals: vals, all: flags.all})
		},
	}
	f := cmd.Flags()
	f.IntVar(&flags.revision, "revision", 0, "get the named release with revision")
	completeRevisionFlag(cmd)
	f.BoolVarP(&flags.all, "all", "a", false, "dump all (computed) values")
	addRevealSecretsFlag(f, &flags.reveal)
	addOutputFlag(cmd, &flags.output)
	return cmd
}

// valuesWriter prints values as helm get values does.
type valuesWriter struct {
	vals map[string]any
	all  bool
}

func (w valuesWriter) WriteTable(out io.Writer) error {
	header := "USER-SUPPLIED VALUES:"
	if w.all {
		header = "COMPUTED VALUES:"
	}
	if _, err := fmt.Fprintln(out, header); err != nil {
		return err
	}
	return output.EncodeYAML(out, w.vals)
}

func (w valuesWriter) WriteJSON(out io.Writer) error { return output.EncodeJSON(out, w.vals) }

func (w valuesWriter) WriteYAML(out io.Writer) error { return output.EncodeYAML(out, w.vals) }

// addRevealSecretsFlag adds --reveal-secrets, which shows the values that came from an encrypted
// values file.
func addRevealSecretsFlag(f *pflag.FlagSet, reveal *bool) {
	f.BoolVar(reveal, "reveal-secrets", false, "show the values that came from an encrypted values file; without it each is shown as "+valuemask.Mask)
}

// maskValues is vals, values of revision rel, with those that came from an encrypted values file
// masked, unless reveal.
func maskValues(rel *release.Release, vals map[string]any, reveal bool) map[string]any {
	if reveal {
		return vals
	}
	return valuemask.Values(vals, release.EncryptedValuesOf(rel))
}
