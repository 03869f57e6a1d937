package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/cli/output"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

type uninstallFlags struct {
	wait           lifecycle.WaitOptions
	cascade        string
	keepHistory    bool
	noHooks        bool
	dryRun         bool
	ignoreNotFound bool
	description    string
	output         output.Format
}

func newUninstallCommand(streams Streams) *cobra.Command {
	var flags uninstallFlags
	cmd := &cobra.Command{
		Use:        "uninstall RELEASE_NAME [...]",
		Aliases:    []string{"del", "delete", "un"},
		SuggestFor: []string{"remove", "rm"},
		Short:      "uninstall a release and wait until its objects are gone",
		Long: `Uninstall a release: delete its objects in Helm's uninstall order, each only if
it still has the UID it had, and wait (by watching) until every one is gone,
dependents included, before removing the release's record. Objects annotated
helm.sh/resource-policy: keep stay and are listed. If something blocks, the
release stays recorded as uninstalling and running uninstall again goes on.

Several releases are uninstalled one after another; each is reported, and a
release that fails or is blocked does not stop the others. The exit code is 0
when every release was uninstalled, 3 when every failure was a blocked deletion,
and 1 otherwise. With -o json or yaml, one release prints one object and several
print a list.`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeReleaseNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, o, err := flags.setup(cmd, streams, args)
			if err != nil {
				return err
			}
			var results []*lifecycle.UninstallResult
			var errs []error
			for _, name := range args {
				o.Name = name
				res, err := flags.uninstall(cmd, s, o)
				if res != nil && flags.output == output.Table {
					if werr := (uninstallWriter{res}).WriteTable(streams.Out); werr != nil {
						return werr
					}
				}
				if res != nil {
					results = append(results, res)
				}
				if err != nil {
					errs = append(errs, err)
				}
			}
			if flags.output != output.Table && len(results) > 0 {
				var w output.Writer = uninstallWriter{results[0]}
				if len(args) > 1 {
					w = uninstallListWriter(results)
				}
				if werr := flags.output.Write(streams.Out, w); werr != nil {
					return werr
				}
			}
			return joinUninstallErrors(errs)
		},
	}
	flags.addFlags(cmd)
	cmd.Flags().BoolVar(&flags.dryRun, "dry-run", false, "show the plan and run every deletion through the API server's dry run (admission webhooks included); nothing is deleted")
	addOutputFlag(cmd, &flags.output)
	return cmd
}

// addFlags adds uninstall's flags but --dry-run and --output, which berth diff uninstall has its
// own way.
func (flags *uninstallFlags) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	addSkipPreflightFlag(f)
	addWaitFlags(f, &flags.wait, true)
	f.StringVar(&flags.cascade, "cascade", "foreground", `how dependents are deleted: "foreground" (the object goes after its dependents), "background" or "orphan"`)
	f.BoolVar(&flags.keepHistory, "keep-history", false, "remove all associated resources and mark the release as deleted, but retain the release history")
	f.BoolVar(&flags.noHooks, "no-hooks", false, "prevent hooks from running during uninstallation")
	f.BoolVar(&flags.ignoreNotFound, "ignore-not-found", false, `Treat "release not found" as a successful uninstall`)
	f.StringVar(&flags.description, "description", "", "add a custom description")
}

// setup turns uninstall's flags and arguments into the options of the uninstall of the first
// release named (each other is the same with its own name), for berth uninstall and berth diff
// uninstall alike: bad input is refused before the cluster is contacted.
func (flags *uninstallFlags) setup(cmd *cobra.Command, streams Streams, args []string) (*session, lifecycle.UninstallOptions, error) {
	prop, err := cascade(flags.cascade)
	if err != nil {
		return nil, lifecycle.UninstallOptions{}, err
	}
	s, err := newSession(cmd.Context(), cmd, streams.ErrOut)
	if err != nil {
		return nil, lifecycle.UninstallOptions{}, err
	}
	return s, flags.options(args[0], prop), nil
}

// options are the uninstall's options for release name.
func (flags uninstallFlags) options(name string, prop metav1.DeletionPropagation) lifecycle.UninstallOptions {
	return lifecycle.UninstallOptions{
		Name: name, WaitOptions: flags.wait, Cascade: prop, KeepHistory: flags.keepHistory,
		NoHooks: flags.noHooks, DryRun: flags.dryRun, Description: flags.description,
	}
}

// uninstall uninstalls one release; a release that is not there is uninstalled already with
// --ignore-not-found.
func (flags uninstallFlags) uninstall(cmd *cobra.Command, s *session, o lifecycle.UninstallOptions) (*lifecycle.UninstallResult, error) {
	res, err := lifecycle.Uninstall(cmd.Context(), s.deps, o)
	if flags.notFound(err) {
		return &lifecycle.UninstallResult{Name: o.Name}, nil
	}
	return res, err
}

// notFound says err is a release not found that --ignore-not-found makes a success.
func (flags uninstallFlags) notFound(err error) bool {
	return flags.ignoreNotFound && errors.Is(err, release.ErrNotFound)
}

// uninstallErrors are the failures of an uninstall of several releases. It counts as blocked
// (for the exit code) only when every failure is a blocked deletion.
type uninstallErrors []error

func joinUninstallErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return uninstallErrors(errs)
}

func (e uninstallErrors) Error() string { return errors.Join(e...).Error() }

func (e uninstallErrors) Unwrap() []error {
	var unblocked []error
	for _, err := range e {
		var blocked *engine.BlockedError
		if !errors.As(err, &blocked) {
			unblocked = append(unblocked, err)
		}
	}
	if len(unblocked) > 0 {
		return unblocked
	}
	return e
}

// uninstallListWriter prints what the uninstalls of several releases did, as a list.
type uninstallListWriter []*lifecycle.UninstallResult

func (w uninstallListWriter) WriteJSON(out io.Writer) error {
	return output.EncodeJSON(out, w.reports())
}
func (w uninstallListWriter) WriteYAML(out io.Writer) error {
	return output.EncodeYAML(out, w.reports())
}
func (w uninstallListWriter) reports() []uninstallReport {
	out := make([]uninstallReport, len(w))
	for i, res := range w {
		out[i] = uninstallReportOf(res)
	}
	return out
}
func (w uninstallListWriter) WriteTable(out io.Writer) error {
	for _, res := range w {
		if err := (uninstallWriter{res}).WriteTable(out); err != nil {
			return err
		}
	}
	return nil
}

// uninstallWriter prints what an uninstall did: helm's lines for a success, the plan for a dry run,
// and for an uninstall that stopped, the objects it left behind (the error says why); with -o
// json|yaml, the changes in the order of the plans' steps under berth's own key too.
type uninstallWriter struct{ res *lifecycle.UninstallResult }

func (w uninstallWriter) WriteJSON(out io.Writer) error {
	return output.EncodeJSON(out, uninstallReportOf(w.res))
}
func (w uninstallWriter) WriteYAML(out io.Writer) error {
	return output.EncodeYAML(out, uninstallReportOf(w.res))
}

func (w uninstallWriter) WriteTable(out io.Writer) error {
	res := w.res
	if res.DryRun {
		fmt.Fprintf(out, "Plan to uninstall %s (dry run, nothing was deleted):\n%s", res.Name, res.Plan)
		if len(res.Blockers) == 0 {
			fmt.Fprintln(out, "Every deletion passed the API server's dry run.")
		}
		return nil
	}
	if len(res.Kept) > 0 {
		fmt.Fprintln(out, "These resources were kept due to the resource policy:")
		for _, id := range res.Kept {
			fmt.Fprintf(out, "[%s] %s\n", id.Kind, id)
		}
		fmt.Fprintln(out)
	}
	if len(res.Left) > 0 || len(res.Blockers) > 0 {
		fmt.Fprintf(out, "release %q is not uninstalled; these objects are still in the cluster:\n", res.Name)
		for _, id := range res.Left {
			fmt.Fprintf(out, "  %s\n", id)
		}
		return nil
	}
	_, err := fmt.Fprintf(out, "release \"%s\" uninstalled\n", res.Name)
	return err
}

func cascade(s string) (metav1.DeletionPropagation, error) {
	switch s {
	case "foreground":
		return metav1.DeletePropagationForeground, nil
	case "background":
		return metav1.DeletePropagationBackground, nil
	case "orphan":
		return metav1.DeletePropagationOrphan, nil
	}
	return "", fmt.Errorf("invalid --cascade %q: want foreground, background or orphan", s)
}
