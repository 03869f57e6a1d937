package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/cli/output"

	"github.com/berthdev/berth/internal/diff"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/valuemask"
)

// ExitChanges is berth diff's exit code with --detailed-exitcode when the operation would change
// something.
const ExitChanges = 2

// changesFound says berth diff --detailed-exitcode found changes. It is not a failure: it only
// carries the exit code, and nothing is printed for it.
type changesFound struct{}

func (changesFound) Error() string { return "the operation would change the cluster" }

type diffFlags struct {
	opts             diff.Options
	detailedExitCode bool
	output           string
}

func newDiffCommand(streams Streams) *cobra.Command {
	flags := diffFlags{opts: diff.DefaultOptions()}
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "show what install, upgrade, rollback or uninstall would change",
		Long: `Show what an install, upgrade, rollback or uninstall would do, without changing
anything. Each subcommand takes the flags of the command it previews (but --dry-run
and --output) and runs that command's own preparation: the chart is rendered, the
release's records are read, and every object goes through the API server's
server-side dry run of berth's apply (admission webhooks included). What is shown
is the difference between each live object and what the API server says it would
become, so changes made by hand and the defaults the API server adds show too,
while fields other field managers own and berth does not set do not.

The output lists, in the order the operation would go: the hooks that would run
(with weight and delete policy), the objects created, changed (a unified diff of
their YAML), adopted (fields Helm applied client-side), kept and deleted, and the release record written,
then a summary line. Secret values are masked (each shows only whether it
changes) unless --show-secrets (or --reveal-secrets) is given; so are, in every
object, the strings and numbers of the values that came from a values file
encrypted with SOPS, those applied now and those the release's revisions recorded
(one shorter than ` + fmt.Sprint(valuemask.MinLen) + ` bytes, a boolean or a null is not sought: it would mask
unrelated text). Colours are used on a terminal only.

With -o json the result follows the schema berth.dev/diff/v2 (see docs/diff.md).
With --detailed-exitcode the exit code is 0 when nothing would be created,
changed or deleted, 2 when something would, and 1 on error.`,
	}
	pf := cmd.PersistentFlags()
	pf.BoolVar(&flags.opts.ShowSecrets, "show-secrets", false, "show the values of Secrets and those from encrypted values files; without it each is masked")
	pf.BoolVar(&flags.opts.ShowSecrets, "reveal-secrets", false, "the same as --show-secrets")
	pf.IntVar(&flags.opts.Context, "context", flags.opts.Context, "lines of context around each change")
	pf.BoolVar(&flags.detailedExitCode, "detailed-exitcode", false, "exit 0 when nothing would change, 2 when something would, 1 on error")
	pf.StringVarP(&flags.output, "output", "o", "text", `output format: "text" or "json" (schema `+diff.SchemaVersion+`)`)
	cmd.AddCommand(newDiffInstallCommand(streams, &flags), newDiffUpgradeCommand(streams, &flags),
		newDiffRollbackCommand(streams, &flags), newDiffUninstallCommand(streams, &flags))
	return cmd
}

func newDiffInstallCommand(streams Streams, df *diffFlags) *cobra.Command {
	var flags installFlags
	return newDiffSubcommand(streams, df, &cobra.Command{
		Use:   "install NAME CHART",
		Short: "show what berth install would do",
		Args:  cobra.ExactArgs(2),
	}, flags.addFlags, flags.setup, lifecycle.PreviewInstall)
}

func newDiffUpgradeCommand(streams Streams, df *diffFlags) *cobra.Command {
	var flags upgradeFlags
	return newDiffSubcommand(streams, df, &cobra.Command{
		Use:               "upgrade RELEASE CHART",
		Short:             "show what berth upgrade would do",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeReleaseThenChart,
	}, flags.addFlags, flags.setup, lifecycle.PreviewUpgrade)
}

func newDiffRollbackCommand(streams Streams, df *diffFlags) *cobra.Command {
	var flags rollbackFlags
	return newDiffSubcommand(streams, df, &cobra.Command{
		Use:               "rollback RELEASE [REVISION]",
		Short:             "show what berth rollback would do",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeReleaseThenRevision,
	}, flags.addFlags, flags.setup, lifecycle.PreviewRollback)
}

func newDiffUninstallCommand(streams Streams, df *diffFlags) *cobra.Command {
	var flags uninstallFlags
	preview := func(ctx context.Context, d lifecycle.Deps, o lifecycle.UninstallOptions) (*lifecycle.Preview, error) {
		pv, err := lifecycle.PreviewUninstall(ctx, d, o)
		if flags.notFound(err) {
			return nil, nil
		}
		return pv, err
	}
	return newDiffSubcommand(streams, df, &cobra.Command{
		Use:               "uninstall RELEASE_NAME",
		Short:             "show what berth uninstall would do",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeReleaseNames,
	}, flags.addFlags, flags.setup, preview)
}

// newDiffSubcommand completes cmd as the berth diff subcommand of an operation: it takes the
// operation's own flags (addFlags, all but --dry-run and --output) and runs the operation's own
// setup, then shows the operation's preview instead of running it.
func newDiffSubcommand[O any](streams Streams, df *diffFlags, cmd *cobra.Command, addFlags func(*cobra.Command),
	setup func(*cobra.Command, Streams, []string) (*session, O, error),
	preview func(context.Context, lifecycle.Deps, O) (*lifecycle.Preview, error)) *cobra.Command {
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := df.check(); err != nil {
			return err
		}
		s, o, err := setup(cmd, streams, args)
		if err != nil {
			return err
		}
		pv, err := preview(cmd.Context(), s.deps, o)
		opts, serr := df.masking(cmd.Context(), s.deps.Store, pv)
		if serr != nil {
			return errors.Join(err, serr)
		}
		return df.print(cmd, streams, pv, opts, err)
	}
	addFlags(cmd)
	return cmd
}

// check refuses bad diff flags before the cluster is contacted.
func (df diffFlags) check() error {
	if df.output != "text" && df.output != string(output.JSON) {
		return fmt.Errorf("invalid --output %q: want text or json", df.output)
	}
	if df.opts.Context < 0 {
		return fmt.Errorf("invalid --context %d: want 0 or more lines", df.opts.Context)
	}
	return nil
}

// print prints what the preview shows (also when the preview comes with an error: a blocked
// deletion), and with --detailed-exitcode says whether anything would change.
func (df diffFlags) print(cmd *cobra.Command, streams Streams, pv *lifecycle.Preview, opts diff.Options, err error) error {
	if pv == nil {
		return err
	}
	r, cerr := diff.Compute(pv, opts)
	if cerr != nil {
		return errors.Join(err, cerr)
	}
	if df.output == string(output.JSON) {
		if werr := output.EncodeJSON(streams.Out, r); werr != nil {
			return werr
		}
	} else if _, werr := fmt.Fprint(streams.Out, r.Text(colorFor(cmd, streams))); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if df.detailedExitCode && r.HasChanges() {
		cmd.SilenceErrors = true
		return changesFound{}
	}
	return nil
}

// masking are the diff's options with, unless secrets are shown, the texts of the values that
// came from an encrypted values file: of the revision the preview would record, and of every
// revision the release has recorded, whose objects may stand in the cluster now.
func (df diffFlags) masking(ctx context.Context, store release.Reader, pv *lifecycle.Preview) (diff.Options, error) {
	opts := df.opts
	if opts.ShowSecrets || pv == nil || pv.Release == nil {
		return opts, nil
	}
	revisions, err := store.History(ctx, pv.Release.Name)
	if err != nil && !errors.Is(err, release.ErrNotFound) {
		return opts, fmt.Errorf("read the values of release %s/%s to mask: %w", pv.Release.Namespace, pv.Release.Name, err)
	}
	for _, rel := range append(revisions, pv.Release) {
		opts.Secrets = append(opts.Secrets, valuemask.Strings(rel.Config, release.EncryptedValuesOf(rel))...)
	}
	return opts, nil
}

// colorFor says whether to colour the output: Helm's --color (and NO_COLOR, HELM_COLOR), where
// auto means on a terminal.
func colorFor(cmd *cobra.Command, streams Streams) bool {
	switch helmSettings(cmd).ColorMode {
	case "always":
		return true
	case "never":
		return false
	}
	return isTerminal(streams.Out)
}
