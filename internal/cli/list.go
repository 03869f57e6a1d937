package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/gosuri/uitable"
	"github.com/spf13/cobra"

	"helm.sh/helm/v4/pkg/cli/output"

	"github.com/berthdev/berth/internal/release"
)

type listFlags struct {
	short, noHeaders, byDate, reverse, allNamespaces                      bool
	all, deployed, failed, pending, superseded, uninstalled, uninstalling bool
	verified, unverified                                                  bool
	max, offset                                                           int
	timeFormat, filter, selector                                          string
	output                                                                output.Format
}

func newListCommand(streams Streams) *cobra.Command {
	var flags listFlags
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "list releases",
		Long: `This command lists all of the releases for a specified namespace (uses current namespace context if namespace not specified).

By default, it lists all releases in any status. Individual status filters like '--deployed', '--failed',
'--pending', '--uninstalled', '--superseded', and '--uninstalling' can be used
to show only releases in specific states. Such flags can be combined:
'--deployed --failed'.

By default, items are sorted alphabetically. Use the '-d' flag to sort by
release date.

If the --filter flag is provided, it will be treated as a filter. Filters are
regular expressions (Perl compatible) that are applied to the list of releases.
Only items that match the filter will be returned.

'--verified' lists only the releases whose current revision's chart was verified before it
was released (with --verify), and '--unverified' only those whose chart was not.

By default, up to 256 items may be returned. To limit this, use the '--max' flag.
Setting '--max' to 0 returns all results. Pairing the '--max'
flag with the '--offset' flag allows you to page through results.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := releaseStore(cmd.Context(), cmd)
			if err != nil {
				return err
			}
			if flags.verified && flags.unverified {
				return fmt.Errorf("--verified and --unverified ask for opposite releases: give one of them")
			}
			rels, err := flags.list(cmd.Context(), store)
			if err != nil {
				return err
			}
			if flags.short {
				return flags.output.Write(streams.Out, shortListWriter(rels))
			}
			return flags.output.Write(streams.Out, newListWriter(rels, flags.timeFormat, flags.noHeaders))
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&flags.short, "short", "q", false, "output short (quiet) listing format")
	f.BoolVarP(&flags.noHeaders, "no-headers", "", false, "don't print headers when using the default output format")
	f.StringVar(&flags.timeFormat, "time-format", "", `format time using golang time formatter. Example: --time-format "2006-01-02 15:04:05Z0700"`)
	f.BoolVarP(&flags.byDate, "date", "d", false, "sort by release date")
	f.BoolVarP(&flags.reverse, "reverse", "r", false, "reverse the sort order")
	f.BoolVarP(&flags.all, "all", "a", false, "show all releases without any filter applied")
	_ = f.MarkDeprecated("all", "releases in every status are listed by default")
	f.BoolVar(&flags.uninstalled, "uninstalled", false, "show uninstalled releases (if 'berth uninstall --keep-history' was used)")
	f.BoolVar(&flags.superseded, "superseded", false, "show superseded releases")
	f.BoolVar(&flags.uninstalling, "uninstalling", false, "show releases that are currently being uninstalled")
	f.BoolVar(&flags.deployed, "deployed", false, "show deployed releases")
	f.BoolVar(&flags.failed, "failed", false, "show failed releases")
	f.BoolVar(&flags.pending, "pending", false, "show pending releases")
	f.BoolVarP(&flags.allNamespaces, "all-namespaces", "A", false, "list releases across all namespaces")
	f.BoolVar(&flags.verified, "verified", false, "show only releases whose chart was verified before it was released")
	f.BoolVar(&flags.unverified, "unverified", false, "show only releases whose chart was not verified")
	f.IntVarP(&flags.max, "max", "m", 256, "maximum number of releases to fetch")
	f.IntVar(&flags.offset, "offset", 0, "next release index in the list, used to offset from start value")
	f.StringVarP(&flags.filter, "filter", "f", "", "a regular expression (Perl compatible). Any releases that match the expression will be included in the results")
	f.StringVarP(&flags.selector, "selector", "l", "", "Selector (label query) to filter on, supports '=', '==', and '!='.(e.g. -l key1=value1,key2=value2).")
	addOutputFlag(cmd, &flags.output)
	return cmd
}

// list lists the releases of store the flags ask for: with --verified or --unverified, those
// whose newest revision's chart was, or was not, verified, before --max and --offset apply.
func (f listFlags) list(ctx context.Context, store release.Store) ([]*release.Release, error) {
	opts := f.options()
	if !f.verified && !f.unverified {
		return store.List(ctx, opts)
	}
	page := opts
	opts.Max, opts.Offset = 0, 0
	rels, err := store.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	rels = slices.DeleteFunc(rels, func(r *release.Release) bool { return (proofOf(r) != nil) != f.verified })
	rels = rels[min(max(page.Offset, 0), len(rels)):]
	if page.Max > 0 && len(rels) > page.Max {
		rels = rels[:page.Max]
	}
	return rels, nil
}

// options turns the flags into list options; no status flag (or --all) means every status.
func (f listFlags) options() release.ListOptions {
	opts := release.ListOptions{
		AllNamespaces: f.allNamespaces,
		Filter:        f.filter,
		Selector:      f.selector,
		ByDate:        f.byDate,
		Reverse:       f.reverse,
		Max:           f.max,
		Offset:        f.offset,
	}
	if f.all {
		return opts
	}
	for _, s := range []struct {
		on       bool
		statuses []release.Status
	}{
		{f.deployed, []release.Status{release.StatusDeployed}},
		{f.uninstalled, []release.Status{release.StatusUninstalled}},
		{f.uninstalling, []release.Status{release.StatusUninstalling}},
		{f.pending, []release.Status{release.StatusPendingInstall, release.StatusPendingRollback, release.StatusPendingUpgrade}},
		{f.failed, []release.Status{release.StatusFailed}},
		{f.superseded, []release.Status{release.StatusSuperseded}},
	} {
		if s.on {
			opts.Statuses = append(opts.Statuses, s.statuses...)
		}
	}
	return opts
}

// listEntry is one row of helm list, with Helm's JSON and YAML field names.
type listEntry struct {
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
	Revision   string `json:"revision"`
	Updated    string `json:"updated"`
	Status     string `json:"status"`
	Chart      string `json:"chart"`
	AppVersion string `json:"app_version"`
	// Verified is the proof that the chart was verified; berth's own field.
	Verified *release.Provenance `json:"verified,omitempty"`
}

type listWriter struct {
	entries   []listEntry
	noHeaders bool
}

func newListWriter(rels []*release.Release, timeFormat string, noHeaders bool) listWriter {
	entries := make([]listEntry, 0, len(rels))
	for _, r := range rels {
		updated := "-"
		if t := r.Info.LastDeployed; !t.IsZero() {
			updated = t.String()
			if timeFormat != "" {
				updated = t.Format(timeFormat)
			}
		}
		entries = append(entries, listEntry{
			Name:       r.Name,
			Namespace:  r.Namespace,
			Revision:   strconv.Itoa(r.Version),
			Updated:    updated,
			Status:     r.Info.Status.String(),
			Chart:      chartName(r.Chart),
			AppVersion: appVersion(r.Chart),
			Verified:   proofOf(r),
		})
	}
	return listWriter{entries: entries, noHeaders: noHeaders}
}

func (w listWriter) WriteJSON(out io.Writer) error { return output.EncodeJSON(out, w.entries) }

func (w listWriter) WriteYAML(out io.Writer) error { return output.EncodeYAML(out, w.entries) }

func (w listWriter) WriteTable(out io.Writer) error {
	tbl := uitable.New()
	if !w.noHeaders {
		tbl.AddRow("NAME", "NAMESPACE", "REVISION", "UPDATED", "STATUS", "CHART", "APP VERSION")
	}
	for _, e := range w.entries {
		tbl.AddRow(e.Name, e.Namespace, e.Revision, e.Updated, e.Status, e.Chart, e.AppVersion)
	}
	return output.EncodeTable(out, tbl)
}

// shortListWriter prints only the names of releases.
type shortListWriter []*release.Release

func (w shortListWriter) names() []string {
	names := make([]string, 0, len(w))
	for _, r := range w {
		names = append(names, r.Name)
	}
	return names
}

func (w shortListWriter) WriteJSON(out io.Writer) error { return output.EncodeJSON(out, w.names()) }

func (w shortListWriter) WriteYAML(out io.Writer) error { return output.EncodeYAML(out, w.names()) }

func (w shortListWriter) WriteTable(out io.Writer) error {
	for _, name := range w.names() {
		if _, err := fmt.Fprintln(out, name); err != nil {
			return err
		}
	}
	return nil
}
