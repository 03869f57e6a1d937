package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/gosuri/uitable"
	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/cli/output"
	"helm.sh/helm/v4/pkg/cmd/search"
	"helm.sh/helm/v4/pkg/helmpath"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/source"
)

func newSearchCommand(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "search [keyword]",
		Short: "search for a keyword in charts",
		Long:  "Search the chart repositories added with 'berth repo add' or 'helm repo add' for charts.",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newSearchRepoCommand(streams))
	return cmd
}

// searchMaxScore is Helm's: a result that scores higher is no match.
const searchMaxScore = 25

type searchRepoFlags struct {
	versions       bool
	regexp         bool
	devel          bool
	version        string
	maxColWidth    uint
	failOnNoResult bool
	output         output.Format
}

func newSearchRepoCommand(streams Streams) *cobra.Command {
	var flags searchRepoFlags
	cmd := &cobra.Command{
		Use:   "repo [keyword]",
		Short: "search repositories for a keyword in charts",
		Long: `Search reads through all of the repositories configured on the system, and
looks for matches. Search of these repositories uses the metadata stored on
the system (run 'berth repo update' to refresh it).

It will display the latest stable versions of the charts found. If you
specify the --devel flag, the output will include pre-release versions.
If you want to search using a version constraint, use --version.

Examples:

    # Search for stable release versions matching the keyword "nginx"
    $ berth search repo nginx

    # Search for release versions matching the keyword "nginx", including pre-release versions
    $ berth search repo nginx --devel

    # Search for the latest stable release for nginx-ingress with a major version of 1
    $ berth search repo nginx-ingress --version ^1.0.0`,
		RunE: func(cmd *cobra.Command, args []string) error {
			results, err := searchRepositories(helmSettingsPaths(cmd), args, flags)
			if err != nil {
				return err
			}
			return flags.output.Write(streams.Out, searchWriter{results: results, width: flags.maxColWidth, failOnNoResult: flags.failOnNoResult})
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&flags.regexp, "regexp", "r", false, "use regular expressions for searching repositories you have added")
	f.BoolVarP(&flags.versions, "versions", "l", false, "show the long listing, with each version of each chart on its own line, for repositories you have added")
	f.BoolVar(&flags.devel, "devel", false, "use development versions (alpha, beta, and release candidate releases), too. Equivalent to version '>0.0.0-0'. If --version is set, this is ignored")
	f.StringVar(&flags.version, "version", "", "search using semantic versioning constraints on repositories you have added")
	f.UintVar(&flags.maxColWidth, "max-col-width", 50, "maximum column width for output table")
	f.BoolVar(&flags.failOnNoResult, "fail-on-no-result", false, "search fails if no results are found")
	addOutputFlag(cmd, &flags.output)
	return cmd
}

// repoPaths are where Helm keeps the repositories file and the index cache.
type repoPaths struct{ config, cache string }

func helmSettingsPaths(cmd *cobra.Command) repoPaths {
	s := helmSettings(cmd)
	return repoPaths{config: s.RepositoryConfig, cache: s.RepositoryCache}
}

// searchRepositories searches the cached indexes of the user's repositories with Helm's search
// index, as Helm's `search repo` does.
func searchRepositories(paths repoPaths, args []string, flags searchRepoFlags) ([]*search.Result, error) {
	version := flags.version
	if version == "" {
		version = ">0.0.0"
		if flags.devel {
			version = ">0.0.0-0"
		}
	}
	constraint, err := semver.NewConstraint(version)
	if err != nil {
		return nil, fmt.Errorf("--version %q: an invalid version/constraint format: %w", version, err)
	}
	rf, err := repo.LoadFile(paths.config)
	if err != nil || len(rf.Repositories) == 0 {
		return nil, explainRepositoryError(source.ErrNoRepositories, false)
	}
	index := search.NewIndex()
	for _, e := range rf.Repositories {
		ind, err := source.LoadIndexFile(filepath.Join(paths.cache, helmpath.CacheIndexFile(e.Name)))
		if err != nil {
			slog.Warn("repo is corrupt or missing", slog.String("repo", e.Name), slog.Any("error", err))
			continue
		}
		index.AddRepo(e.Name, ind, true)
	}
	var res []*search.Result
	if len(args) == 0 {
		res = index.All()
	} else {
		res, err = index.Search(strings.Join(args, " "), searchMaxScore, flags.regexp)
		if err != nil {
			return nil, err
		}
	}
	search.SortScore(res)
	var out []*search.Result
	found := map[string]bool{}
	for _, r := range res {
		if !flags.versions && found[r.Name] {
			continue
		}
		v, err := semver.NewVersion(r.Chart.Version)
		if err != nil || !constraint.Check(v) {
			continue
		}
		out = append(out, r)
		found[r.Name] = true
	}
	return out, nil
}

type searchWriter struct {
	results        []*search.Result
	width          uint
	failOnNoResult bool
}

type repoChartElement struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	AppVersion  string `json:"app_version"`
	Description string `json:"description"`
}

func (w searchWriter) WriteTable(out io.Writer) error {
	if len(w.results) == 0 {
		if w.failOnNoResult {
			return errors.New("no results found")
		}
		_, err := fmt.Fprintln(out, "No results found")
		return err
	}
	table := uitable.New()
	table.MaxColWidth = w.width
	table.AddRow("NAME", "CHART VERSION", "APP VERSION", "DESCRIPTION")
	for _, r := range w.results {
		table.AddRow(r.Name, r.Chart.Version, r.Chart.AppVersion, r.Chart.Description)
	}
	return output.EncodeTable(out, table)
}

func (w searchWriter) elements() ([]repoChartElement, error) {
	if len(w.results) == 0 && w.failOnNoResult {
		return nil, errors.New("no results found")
	}
	list := make([]repoChartElement, 0, len(w.results))
	for _, r := range w.results {
		list = append(list, repoChartElement{r.Name, r.Chart.Version, r.Chart.AppVersion, r.Chart.Description})
	}
	return list, nil
}

func (w searchWriter) WriteJSON(out io.Writer) error {
	list, err := w.elements()
	if err != nil {
		return err
	}
	return output.EncodeJSON(out, list)
}

func (w searchWriter) WriteYAML(out io.Writer) error {
	list, err := w.elements()
	if err != nil {
		return err
	}
	return output.EncodeYAML(out, list)
}
