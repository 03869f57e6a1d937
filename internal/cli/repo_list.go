package cli

import (
	"fmt"
	"io"

	"github.com/gosuri/uitable"
	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/cli/output"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/source"
)

func newRepoListCommand(streams Streams) *cobra.Command {
	var format output.Format
	var noHeaders bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "list chart repositories",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			repos := source.Repositories(helmSettings(cmd))
			if len(repos) == 0 && format != output.JSON && format != output.YAML {
				fmt.Fprintln(streams.ErrOut, "no repositories to show")
				return nil
			}
			return format.Write(streams.Out, repoListWriter{repos: repos, noHeaders: noHeaders})
		},
	}
	cmd.Flags().BoolVar(&noHeaders, "no-headers", false, "suppress headers in the output")
	addOutputFlag(cmd, &format)
	return cmd
}

type repoListWriter struct {
	repos     []*repo.Entry
	noHeaders bool
}

type repositoryElement struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

func (w repoListWriter) WriteTable(out io.Writer) error {
	table := uitable.New()
	if !w.noHeaders {
		table.AddRow("NAME", "URL")
	}
	for _, e := range w.repos {
		table.AddRow(e.Name, e.URL)
	}
	return output.EncodeTable(out, table)
}

func (w repoListWriter) elements() []repositoryElement {
	list := make([]repositoryElement, 0, len(w.repos))
	for _, e := range w.repos {
		list = append(list, repositoryElement{Name: e.Name, URL: e.URL})
	}
	return list
}

func (w repoListWriter) WriteJSON(out io.Writer) error { return output.EncodeJSON(out, w.elements()) }

func (w repoListWriter) WriteYAML(out io.Writer) error { return output.EncodeYAML(out, w.elements()) }
