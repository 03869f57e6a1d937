package cli

import (
	"errors"
	"fmt"
	"text/template"

	"github.com/spf13/cobra"

	"helm.sh/helm/v4/pkg/cli/output"

	"github.com/berthdev/berth/internal/valuemask"
)

func newGetAllCommand(streams Streams) *cobra.Command {
	var revision int
	var tmpl string
	var reveal bool
	cmd := &cobra.Command{
		Use:   "all RELEASE_NAME",
		Short: "download all information for a named release",
		Long: `This command prints a human readable collection of information about the
notes, hooks, supplied values, and generated manifest file of the given release.

A value that came from a values file encrypted with SOPS is shown as ` + valuemask.Mask + `
(a map or a list there masked whole), also to --template, unless --reveal-secrets
is given. The manifest is shown as it was rendered.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeReleaseName,
		RunE: func(cmd *cobra.Command, args []string) error {
			var t *template.Template
			if tmpl != "" {
				var err error
				if t, err = template.New("_").Parse(tmpl); err != nil {
					return fmt.Errorf("invalid --template: %w", err)
				}
			}
			rel, err := lookupRelease(cmd, args[0], revision)
			if err != nil {
				return err
			}
			if t != nil {
				if !reveal {
					r := *rel
					r.Config = maskValues(rel, rel.Config, false)
					rel = &r
				}
				return t.Execute(streams.Out, map[string]any{"Release": rel})
			}
			if rel.Chart == nil || rel.Chart.Metadata == nil {
				return fmt.Errorf("release %s/%s revision %d: %w", rel.Namespace, rel.Name, rel.Version,
					errors.New("the record holds no chart metadata"))
			}
			return output.Table.Write(streams.Out, statusWriter{rel: rel, all: true, revealSecrets: reveal})
		},
	}
	f := cmd.Flags()
	f.IntVar(&revision, "revision", 0, "get the named release with revision")
	completeRevisionFlag(cmd)
	addRevealSecretsFlag(f, &reveal)
	f.StringVar(&tmpl, "template", "", "go template for formatting the output, eg: {{.Release.Name}}")
	return cmd
}
