package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

type recoverFlags struct {
	rollback, takeOwnership, noHooks bool
	wait                             lifecycle.WaitOptions
}

func newRecoverCommand(streams Streams) *cobra.Command {
	var flags recoverFlags
	cmd := &cobra.Command{
		Use:   "recover RELEASE",
		Short: "finish (or roll back) an operation on a release that was interrupted",
		Long: `Finish an install, upgrade, rollback or uninstall that was interrupted: its
process was killed or stopped, or Helm left the release pending-install,
pending-upgrade, pending-rollback or uninstalling. berth resumes it from its
journal (the steps it records as done are skipped; every step is safe to run
again), or from the release's record alone when there is no journal.

With --rollback, the operation is undone instead: an interrupted install is
uninstalled, an interrupted upgrade or rollback is rolled back to the deployed
revision. An uninstall that may have deleted objects cannot be rolled back: it
is finished.

Any other command on the release does the same recovery (finishing) first.

A journal is a Secret anyone who may write Secrets in the namespace can write:
what it asks is granted only with the flags that grant it. An operation begun
with --take-ownership or --no-hooks is finished with the same flag; without it,
ownership is checked again, and a journal that skips hooks is refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := newSession(cmd.Context(), cmd, streams.ErrOut)
			if err != nil {
				return err
			}
			res, err := lifecycle.Recover(cmd.Context(), s.deps, lifecycle.RecoverOptions{
				Name: args[0], Rollback: flags.rollback, TakeOwnership: flags.takeOwnership, NoHooks: flags.noHooks, WaitOptions: flags.wait,
			})
			if err != nil {
				return err
			}
			return printRecovered(streams, res)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&flags.rollback, "rollback", false, "undo the interrupted operation instead of finishing it")
	f.BoolVar(&flags.takeOwnership, "take-ownership", false, "let the interrupted operation take the objects it applies when another release, or none, owns them, as its journal asks")
	f.BoolVar(&flags.noHooks, "no-hooks", false, "let the interrupted operation skip the chart's hooks, as its journal asks")
	f.DurationVar(&flags.wait.Timeout, "timeout", 5*time.Minute, "deadline for the whole operation")
	f.BoolVar(&flags.wait.WaitForLock, "wait-for-lock", false, "when another berth operation holds the release, wait for it (within --timeout) instead of failing")
	return cmd
}

func printRecovered(streams Streams, res *lifecycle.RecoverResult) error {
	if res.Interrupted == nil {
		_, err := fmt.Fprintf(streams.Out, "release %q: %s\n", res.Name, res.Action)
		return err
	}
	fmt.Fprintf(streams.Out, "release %q: %s: done: %s\n", res.Name, res.Interrupted.Describe(), res.Action)
	if res.Release == nil && res.Interrupted.Incomplete > 0 {
		// The install stopped while writing its first record: nothing was installed.
		_, err := fmt.Fprintf(streams.Out, "release %q has no revision\n", res.Name)
		return err
	}
	if res.Release == nil || res.Release.Info.Status == release.StatusUninstalled {
		_, err := fmt.Fprintf(streams.Out, "release \"%s\" uninstalled\n", res.Name)
		return err
	}
	_, err := fmt.Fprintf(streams.Out, "release %q is %s at revision %d\n", res.Name, res.Release.Info.Status, res.Release.Version)
	return err
}

// operationLine says, for berth status, what operation holds a release or was left unfinished;
// empty when there is none.
func operationLine(in *lifecycle.Inspection, name string, now time.Time) string {
	switch {
	case in == nil:
		return ""
	case in.Live:
		line := fmt.Sprintf("OPERATION: in progress: %s since %s", in.Holder, in.Holder.Since.Format(time.ANSIC))
		return joinLines(line, windowLine(lifecycle.WindowOf(in.Running), now, false))
	case in.Interrupted != nil:
		i := in.Interrupted
		line := fmt.Sprintf("INTERRUPTED: %s; berth recover %s will %s (with --rollback: %s)", i.Describe(), name, i.Next(false), i.Next(true))
		return joinLines(line, windowLine(lifecycle.WindowOf(i.Journal), now, true))
	}
	return ""
}

// windowLine says what the watch window w (--watch-for) of an operation watches and how much of it
// is left at now; of an interrupted operation, what its resumption watches for. "" when there is
// no window, or it ended.
func windowLine(w *lifecycle.Window, now time.Time, interrupted bool) string {
	if w == nil || w.Done {
		return ""
	}
	what := fmt.Sprintf("WATCH WINDOW: revision %d: %d object(s) watched for regressions for %s (not ready for %s at most, %d restart(s) of a container)",
		w.Revision, len(w.Objects), w.For, w.Tolerance, w.Restarts)
	switch {
	case w.Started.IsZero():
		return what + "; it starts once they are ready"
	case interrupted && w.Left(now) == 0:
		return what + fmt.Sprintf("; started %s, its time is over: resuming judges the revision once, from what it sees then", w.Started.Format(time.ANSIC))
	case interrupted:
		return what + fmt.Sprintf("; started %s: resuming watches for the %s left", w.Started.Format(time.ANSIC), w.Left(now).Round(time.Second))
	}
	return what + fmt.Sprintf("; started %s, %s left", w.Started.Format(time.ANSIC), w.Left(now).Round(time.Second))
}

// joinLines joins the lines that are not empty.
func joinLines(lines ...string) string {
	var out []string
	for _, l := range lines {
		if l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
