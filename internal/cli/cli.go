// Package cli turns command lines into calls to berth's packages and prints the results.
package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	helmcli "helm.sh/helm/v4/pkg/cli"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/lifecycle"
)

// Streams are the standard streams a command reads from and writes to.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Exit codes beyond 0 (success) and 1 (failure).
const (
	// ExitBlocked: an operation was blocked (an admission webhook, a finalizer, dependents, a
	// missing permission); berth named the blocker, and running the command again once it is
	// fixed goes on.
	ExitBlocked = 3
	// ExitInterrupted: an operation was stopped by SIGINT or SIGTERM (128+SIGINT) at a step its
	// journal records; the next command on the release, or berth recover, goes on from there.
	ExitInterrupted = 130
)

// ExitCode is the process exit code for what Run returned.
func ExitCode(err error) int {
	var blocked *engine.BlockedError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, lifecycle.ErrInterrupted):
		return ExitInterrupted
	case errors.As(err, new(changesFound)):
		return ExitChanges
	case errors.As(err, new(doctorFound)):
		code, _ := doctorExitCode(err)
		return code
	case errors.As(err, &blocked), errors.As(err, new(*doctor.PreflightError)), unavailableAPI(err):
		return ExitBlocked
	default:
		return 1
	}
}

// unavailableAPI reports whether err says a kind cannot be reached because the APIService that
// serves it is not Available: the operation is blocked, not wrong.
func unavailableAPI(err error) bool {
	var u *cluster.UnknownKindError
	return errors.As(err, &u) && u.Unavailable != nil
}

// Run executes the berth command line args (without the program name).
// Errors are printed to streams.ErrOut and returned; only main exits.
func Run(ctx context.Context, streams Streams, args []string) error {
	if len(args) > 0 && args[0] == chart.RendererCommand {
		// A render in a sandbox: the child a *chart.Sandbox started, before anything else.
		return chart.ServeRenderer(args[1:], streams.In, streams.Out)
	}
	settings := newSettings(os.Getenv)
	root := newRootCommand(streams, settings)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(withSettings(ctx, settings))
	if err == nil {
		return nil
	}
	err = explainOperationError(err)
	if cmd == nil || cmd == root || !cmd.SilenceErrors {
		root.PrintErrln(root.ErrPrefix(), err.Error())
	}
	return err
}

func newRootCommand(streams Streams, settings *helmcli.EnvSettings) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "berth",
		Short: "Install, upgrade, roll back and uninstall Helm charts with a lifecycle that never lies",
		Long: `berth is a release manager for Kubernetes that deploys ordinary Helm charts.

It reads and writes Helm's own release records, so releases move freely between
berth and helm. Every hook runs to an observed outcome, uninstall waits until
each object is gone, and when something blocks, berth stops and names it.`,
		SilenceUsage: true,
		// Run prints errors, with what to do about them.
		SilenceErrors: true,
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	// Helm's global flags, bound to Helm's settings: the same names, defaults, help text and
	// HELM_* variables as helm's.
	settings.AddFlags(cmd.PersistentFlags())
	cmd.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		if settings.Debug {
			slog.SetDefault(slog.New(slog.NewTextHandler(streams.ErrOut, &slog.HandlerOptions{Level: slog.LevelDebug})))
		}
	}
	cmd.AddCommand(newVersionCommand(streams))
	cmd.AddCommand(newDashboardCommand(streams))
	cmd.AddCommand(newStatusCommand(streams))
	cmd.AddCommand(newListCommand(streams))
	cmd.AddCommand(newHistoryCommand(streams))
	cmd.AddCommand(newGetCommand(streams))
	cmd.AddCommand(newTemplateCommand(streams))
	cmd.AddCommand(newInstallCommand(streams))
	cmd.AddCommand(newUpgradeCommand(streams))
	cmd.AddCommand(newRollbackCommand(streams))
	cmd.AddCommand(newUninstallCommand(streams))
	cmd.AddCommand(newRecoverCommand(streams))
	cmd.AddCommand(newTestCommand(streams))
	cmd.AddCommand(newRegistryCommand(streams), newPushCommand(streams))
	cmd.AddCommand(newCompletionCommand(streams))
	cmd.AddCommand(newDoctorCommand(streams))
	cmd.AddCommand(newRepoCommand(streams))
	cmd.AddCommand(newSearchCommand(streams))
	cmd.AddCommand(newPullCommand(streams))
	cmd.AddCommand(newShowCommand(streams))
	cmd.AddCommand(newDependencyCommand(streams))
	cmd.AddCommand(newCreateCommand(streams), newLintCommand(streams), newPackageCommand(streams), newVerifyCommand(streams))
	cmd.AddCommand(newDiffCommand(streams))
	cmd.AddCommand(newControllerCommand(streams), newReconcileCommand(streams), newRolloutCommand(streams))
	cmd.AddCommand(newEnvCommand(streams), newPluginCommand(streams))
	// Flag warnings (a deprecated flag used) go to stderr, not into output meant for programs.
	warnTo(cmd, streams.ErrOut)
	return cmd
}

// warnTo sends what the flag parser of cmd and its subcommands warns about to w.
func warnTo(cmd *cobra.Command, w io.Writer) {
	cmd.Flags().SetOutput(w)
	for _, c := range cmd.Commands() {
		warnTo(c, w)
	}
}
