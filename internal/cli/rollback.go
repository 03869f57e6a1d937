package cli

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/cli/output"

	"github.com/berthdev/berth/internal/lifecycle"
)

type rollbackFlags struct {
	wait          lifecycle.WaitOptions
	dryRun        lifecycle.DryRun
	noHooks       bool
	takeOwnership bool
	historyMax    int
	output        output.Format
	forceReplace  bool
	description   string
	cleanupOnFail bool
	// allowUnverified lets a release whose last chart was verified go back to one that was not.
	allowUnverified bool
}

func newRollbackCommand(streams Streams) *cobra.Command {
	var flags rollbackFlags
	cmd := &cobra.Command{
		Use:   "rollback RELEASE [REVISION]",
		Short: "roll a release back to an earlier revision",
		Long: `Roll a release back to an earlier revision: a new revision is recorded with the
chart, values and manifest of the earlier one, and the cluster is made to match
it. Without REVISION, or with 0, the release goes back to the revision before
the last. With -o json or yaml, the new revision is printed as helm status prints
it, and what the rollback did to each object under the key "berth".`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeReleaseThenRevision,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, o, err := flags.setup(cmd, streams, args)
			if err != nil {
				return err
			}
			res, err := lifecycle.Rollback(cmd.Context(), s.deps, o)
			if summary := summarize(res); summary != "" {
				fmt.Fprintln(streams.ErrOut, summary)
			}
			if err != nil {
				return err
			}
			if res.Plan != nil {
				fmt.Fprintf(streams.ErrOut, "Plan (server-side dry run, nothing was changed):\n%s", res.Plan)
			}
			if flags.output != output.Table {
				return flags.output.Write(streams.Out, resultWriter{statusWriter: statusWriter{rel: res.Release}, report: resultReport(res)})
			}
			_, err = fmt.Fprintln(streams.Out, "Rollback was a success! Happy Helming!")
			return err
		},
	}
	flags.addFlags(cmd)
	addDryRunFlag(cmd.Flags(), &flags.dryRun)
	addOutputFlag(cmd, &flags.output)
	return cmd
}

// rollbackArgs reads RELEASE [REVISION]; no revision, or 0, is the one before the last.
func rollbackArgs(args []string) (string, int, error) {
	version := 0
	if len(args) == 2 {
		v, err := strconv.Atoi(args[1])
		if err != nil || v < 0 {
			return "", 0, fmt.Errorf("invalid revision %q: want a revision number", args[1])
		}
		version = v
	}
	return args[0], version, nil
}

// checkDescription refuses a rollback description longer than Helm takes.
func checkDescription(d string) error {
	if n := utf8.RuneCountInString(d); n > action.MaxDescriptionLength {
		return fmt.Errorf("description must be %d characters or less, got %d", action.MaxDescriptionLength, n)
	}
	return nil
}

// setup turns rollback's flags and arguments (RELEASE [REVISION]) into the rollback's options, for
// berth rollback and berth diff rollback alike: bad input is refused before the cluster is
// contacted.
func (flags *rollbackFlags) setup(cmd *cobra.Command, streams Streams, args []string) (*session, lifecycle.RollbackOptions, error) {
	name, version, err := rollbackArgs(args)
	if err != nil {
		return nil, lifecycle.RollbackOptions{}, err
	}
	if err := checkDescription(flags.description); err != nil {
		return nil, lifecycle.RollbackOptions{}, err
	}
	if err := checkWatchFlags(flags.wait.Watch); err != nil {
		return nil, lifecycle.RollbackOptions{}, err
	}
	if !cmd.Flags().Changed("history-max") {
		flags.historyMax = helmSettings(cmd).MaxHistory // HELM_MAX_HISTORY, as upgrade
	}
	s, err := newSession(cmd.Context(), cmd, streams.ErrOut)
	if err != nil {
		return nil, lifecycle.RollbackOptions{}, err
	}
	return s, flags.options(name, version, s), nil
}

// options are the rollback's options for release name.
func (flags rollbackFlags) options(name string, version int, s *session) lifecycle.RollbackOptions {
	return lifecycle.RollbackOptions{
		Name: name, Namespace: s.clients.Namespace, Version: version, WaitOptions: flags.wait,
		TakeOwnership: flags.takeOwnership, NoHooks: flags.noHooks, DryRun: flags.dryRun, HistoryMax: flags.historyMax,
		ForceReplace: flags.forceReplace, Description: flags.description, CleanupOnFail: flags.cleanupOnFail,
		AllowUnverified: flags.allowUnverified,
	}
}

// addFlags adds rollback's flags but --dry-run, which berth diff rollback has its own way.
func (flags *rollbackFlags) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	addSkipPreflightFlag(f)
	addWaitFlags(f, &flags.wait, false)
	addWatchFlags(f, &flags.wait.Watch, "rollback", " (its revision is recorded failed; nothing rolls a rollback back)")
	f.BoolVar(&flags.noHooks, "no-hooks", false, "do not run the hooks of the rollback")
	f.BoolVar(&flags.takeOwnership, "take-ownership", false, "adopt existing objects that belong to another release or to none")
	addForceReplaceFlag(f, &flags.forceReplace)
	f.BoolVar(&flags.allowUnverified, "allow-unverified", false, "roll back to a revision whose chart was not verified, though the last revision's was")
	addServerSideFlags(cmd, false)
	f.StringVar(&flags.description, "description", "", fmt.Sprintf("add a custom description for the rollback (max %d characters)", action.MaxDescriptionLength))
	f.BoolVar(&flags.cleanupOnFail, "cleanup-on-fail", false, "allow deletion of new resources created in this rollback when rollback fails: as in Helm, when applying the objects fails, those that did not exist before are deleted, and waited for until gone, once the failure is recorded (the last third of --timeout is kept for it)")
	f.IntVar(&flags.historyMax, "history-max", 10, "limit the maximum number of revisions saved per release (HELM_MAX_HISTORY sets the default). Use 0 for no limit")
}
