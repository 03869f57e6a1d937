package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berthdev/berth/internal/source"
)

func newRepoRemoveCommand(streams Streams) *cobra.Command {
	return &cobra.Command{
		Use:     "remove [REPO1 [REPO2 ...]]",
		Aliases: []string{"rm"},
		Short:   "remove one or more chart repositories",
		Long: `Remove chart repositories and their cached indexes. When one of the names is
not a repository, nothing is removed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := source.RemoveRepositories(cmd.Context(), helmSettings(cmd), args); err != nil {
				return explainRepositoryError(err, false)
			}
			for _, name := range args {
				fmt.Fprintf(streams.Out, "%q has been removed from your repositories\n", name)
			}
			return nil
		},
	}
}
