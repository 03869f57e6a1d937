package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/getter"

	"github.com/berthdev/berth/internal/source"
)

func newRepoUpdateCommand(streams Streams) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:     "update [REPO1 [REPO2 ...]]",
		Aliases: []string{"up"},
		Short:   "update information of available charts locally from chart repositories",
		Long: `Update gets the latest information about charts from the respective chart
repositories. Information is cached locally, where it is used by commands like
'berth search repo' and 'berth install REPO/CHART'.

You can optionally specify a list of repositories you want to update; without
one, every repository is updated. A repository that cannot be reached keeps the
index cached before.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			results, err := source.UpdateRepositories(cmd.Context(), helmSettings(cmd), args, source.UpdateOptions{Timeout: timeout})
			if err != nil {
				return explainRepositoryError(err, false)
			}
			fmt.Fprintln(streams.Out, "Hang tight while we grab the latest from your chart repositories...")
			var failed []string
			for _, r := range results {
				if r.Err != nil {
					fmt.Fprintf(streams.Out, "...Unable to get an update from the %q chart repository (%s):\n\t%s\n", r.Name, r.URL, explainRepositoryError(r.Err, false))
					failed = append(failed, r.URL)
					continue
				}
				fmt.Fprintf(streams.Out, "...Successfully got an update from the %q chart repository\n", r.Name)
			}
			if len(failed) > 0 {
				return fmt.Errorf("failed to update the following repositories: %s", failed)
			}
			fmt.Fprintln(streams.Out, "Update Complete. ⎈Happy Helming!⎈")
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", getter.DefaultHTTPTimeout*time.Second, "time to wait for the index file download to complete")
	return cmd
}
