package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/source"
)

type repoIndexFlags struct {
	url, merge string
	json       bool
}

func newRepoIndexCommand(streams Streams) *cobra.Command {
	var flags repoIndexFlags
	cmd := &cobra.Command{
		Use:   "index [DIR]",
		Short: "generate an index file given a directory containing packaged charts",
		Long: `Read the directory DIR, generate an index file based on the charts found
and write the result to 'index.yaml' in that directory.

This tool is used for creating an 'index.yaml' file for a chart repository. To
set an absolute URL to the charts, use '--url' flag.

To merge the generated index with an existing index file, use the '--merge'
flag. In this case, the charts found in the directory will be merged into the
index passed in with --merge, with local charts taking priority over existing
charts.

index.yaml is replaced in one step: a reader sees the old index or the new one.
An index given with --merge that does not load changes nothing.`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return nil, cobra.ShellCompDirectiveFilterDirs
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return writeRepoIndex(args[0], flags)
		},
	}
	f := cmd.Flags()
	f.StringVar(&flags.url, "url", "", "url of chart repository")
	f.StringVar(&flags.merge, "merge", "", "merge the generated index into the given index")
	f.BoolVar(&flags.json, "json", false, "output in JSON format")
	return cmd
}

// writeRepoIndex writes DIR/index.yaml as helm repo index does, with Helm's IndexDirectory,
// Merge and atomic WriteFile.
func writeRepoIndex(dir string, flags repoIndexFlags) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory: give the directory of the packaged charts (.tgz)", dir)
	}
	idx, err := repo.IndexDirectory(dir, flags.url)
	if err != nil {
		return fmt.Errorf("index %s: %w", dir, err)
	}
	if flags.merge != "" {
		old, err := source.LoadIndexFile(flags.merge)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			old = repo.NewIndexFile()
		case err != nil:
			return fmt.Errorf("merge failed: %s: %w: give an index.yaml that loads", flags.merge, err)
		}
		idx.Merge(old)
	}
	idx.SortEntries()
	out := filepath.Join(dir, "index.yaml")
	if flags.json {
		return idx.WriteJSONFile(out, 0o644)
	}
	return idx.WriteFile(out, 0o644)
}
