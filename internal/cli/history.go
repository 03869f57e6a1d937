package cli

import (
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/gosuri/uitable"
	"github.com/spf13/cobra"

	"helm.sh/helm/v4/pkg/cli/output"

	"github.com/berthdev/berth/internal/release"
)

type historyFlags struct {
	max          int
	showRollback bool
	output       output.Format
}

func newHistoryCommand(streams Streams) *cobra.Command {
	var flags historyFlags
	cmd := &cobra.Command{
		Use:     "history RELEASE_NAME",
		Aliases: []string{"hist"},
		Short:   "fetch release history",
		Long: `History prints historical revisions for a given release.

A default maximum of 256 revisions will be returned. Setting '--max'
configures the maximum length of the revision list returned.

The historical release set is printed as a formatted table, e.g:

    $ berth history angry-bird
    REVISION    UPDATED                     STATUS          CHART             APP VERSION     VERIFIED    DESCRIPTION
    1           Mon Oct 3 10:15:13 2016     superseded      alpine-0.1.0      1.0             no          Initial install
    2           Mon Oct 3 10:15:13 2016     superseded      alpine-0.1.0      1.0             cosign      Upgraded successfully
    3           Mon Oct 3 10:15:13 2016     superseded      alpine-0.1.0      1.0             no          Rolled back to 1
    4           Mon Oct 3 10:15:13 2016     deployed        alpine-0.1.0      1.0             cosign      Upgraded successfully

The VERIFIED column is shown when a revision's chart was verified before it was released
(--verify): the provider it was verified with (pgp), or no.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeReleaseName,
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := releaseStore(cmd.Context(), cmd)
			if err != nil {
				return err
			}
			revisions, err := store.History(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return flags.output.Write(streams.Out, newHistoryWriter(revisions, flags.max, flags.showRollback))
		},
	}
	f := cmd.Flags()
	f.IntVar(&flags.max, "max", 256, "maximum number of revision to include in history")
	f.BoolVar(&flags.showRollback, "show-rollback-revision", false, "show the rollback revision column in table output")
	addOutputFlag(cmd, &flags.output)
	return cmd
}

// historyEntry is one row of helm history, with Helm's JSON and YAML field names.
type historyEntry struct {
	Revision         int        `json:"revision"`
	Updated          *time.Time `json:"updated,omitempty"`
	Status           string     `json:"status"`
	Chart            string     `json:"chart"`
	AppVersion       string     `json:"app_version"`
	RollbackRevision int        `json:"rollback_revision,omitempty"`
	Description      string     `json:"description"`
	// Verified is the proof that the revision's chart was verified; berth's own field.
	Verified *release.Provenance `json:"verified,omitempty"`
}

type historyWriter struct {
	entries      []historyEntry
	showRollback bool
}

// newHistoryWriter keeps the newest limit revisions (oldest first), as helm history does.
func newHistoryWriter(revisions []*release.Release, limit int, showRollback bool) historyWriter {
	revisions = slices.Clone(revisions)
	slices.SortFunc(revisions, func(a, b *release.Release) int { return a.Version - b.Version })
	if len(revisions) > limit {
		revisions = revisions[len(revisions)-max(limit, 0):]
	}
	entries := make([]historyEntry, 0, len(revisions))
	for _, r := range revisions {
		e := historyEntry{
			Revision:         r.Version,
			Status:           r.Info.Status.String(),
			Chart:            chartName(r.Chart),
			AppVersion:       appVersion(r.Chart),
			RollbackRevision: r.Info.RollbackRevision,
			Description:      r.Info.Description,
			Verified:         proofOf(r),
		}
		if !r.Info.LastDeployed.IsZero() {
			e.Updated = &r.Info.LastDeployed
		}
		entries = append(entries, e)
	}
	return historyWriter{entries: entries, showRollback: showRollback}
}

func (w historyWriter) WriteJSON(out io.Writer) error { return output.EncodeJSON(out, w.entries) }

func (w historyWriter) WriteYAML(out io.Writer) error { return output.EncodeYAML(out, w.entries) }

func (w historyWriter) WriteTable(out io.Writer) error {
	// The VERIFIED column is there when a revision's chart was verified: the history of a
	// release that never was is Helm's, to the byte.
	verified := slices.ContainsFunc(w.entries, func(e historyEntry) bool { return e.Verified != nil })
	tbl := uitable.New()
	tbl.AddRow(w.row(verified, "REVISION", "UPDATED", "STATUS", "CHART", "APP VERSION", "VERIFIED", "ROLLBACK", "DESCRIPTION")...)
	for _, e := range w.entries {
		var updated time.Time
		if e.Updated != nil {
			updated = *e.Updated
		}
		rollback := ""
		if e.RollbackRevision > 0 {
			rollback = strconv.Itoa(e.RollbackRevision)
		}
		tbl.AddRow(w.row(verified, e.Revision, updated.Format(time.ANSIC), e.Status, e.Chart, e.AppVersion,
			verifiedColumn(e.Verified), rollback, e.Description)...)
	}
	return output.EncodeTable(out, tbl)
}

// row is a table row of the columns revision to description, without VERIFIED unless verified,
// without ROLLBACK unless --show-rollback-revision.
func (w historyWriter) row(verified bool, revision, updated, status, chart, appVersion, verifiedCol, rollback, description any) []any {
	row := []any{revision, updated, status, chart, appVersion}
	if verified {
		row = append(row, verifiedCol)
	}
	if w.showRollback {
		row = append(row, rollback)
	}
	return append(row, description)
}
