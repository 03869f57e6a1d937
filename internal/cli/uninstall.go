package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/cli/output"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/lifecycle"
)

type uninstallFlags struct {
	wait        lifecycle.WaitOptions
	cascade     string
	keepHistory bool
	noHooks     bool
	dryRun      bool
	output      output.Format
}

func newUninstallCommand(streams Streams) *cobra.Command {
	var flags uninstallFlags
	cmd := &cobra.Command{
		Use:     "uninstall RELEASE_NAME",
		Aliases: []string{"del", "delete", "un"},
		Short:   "uninstall a release and wait until its objects are gone",
		Long: `Uninstall a release: delete its objects in Helm's uninstall order, each only if
it still has the UID it had, and wait (by watching) until every one is gone,
dependents included, before removing the release's record. Objects annotated
helm.sh/resource-policy: keep stay and are listed. If something blocks, the
release stays recorded as uninstalling and running uninstall again goes on.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prop, err := cascade(flags.cascade)
			if err != nil {
				return err
			}
			s, err := newSession(cmd.Context(), cmd, streams.ErrOut)
			if err != nil {
				return err
			}
			res, err := lifecycle.Uninstall(cmd.Context(), s.deps, lifecycle.UninstallOptions{
				Name: args[0], WaitOptions: flags.wait, Cascade: prop, KeepHistory: flags.keepHistory,
				NoHooks: flags.noHooks, DryRun: flags.dryRun,
			})
			if res == nil {
				return err
			}
			if flags.output != output.Table {
				if werr := flags.output.Write(streams.Out, uninstallWriter{res}); werr != nil {
					return werr
				}
				return err
			}
			if werr := (uninstallWriter{res}).WriteTable(streams.Out); werr != nil {
				return werr
			}
			return err
		},
	}
	f := cmd.Flags()
	addWaitFlags(f, &flags.wait, true)
	f.StringVar(&flags.cascade, "cascade", "foreground", `how dependents are deleted: "foreground" (the object goes after its dependents), "background" or "orphan"`)
	f.BoolVar(&flags.keepHistory, "keep-history", false, "remove all associated resources and mark the release as deleted, but retain the release history")
	f.BoolVar(&flags.noHooks, "no-hooks", false, "prevent hooks from running during uninstallation")
	f.BoolVar(&flags.dryRun, "dry-run", false, "show the plan and run every deletion through the API server's dry run (admission webhooks included); nothing is deleted")
	addOutputFlag(cmd, &flags.output)
	return cmd
}

// uninstallWriter prints what an uninstall did: helm's lines for a success, the plan for a dry run,
// and for an uninstall that stopped, the objects it left behind (the error says why).
type uninstallWriter struct{ res *lifecycle.UninstallResult }

func (w uninstallWriter) WriteJSON(out io.Writer) error { return output.EncodeJSON(out, w.res) }
func (w uninstallWriter) WriteYAML(out io.Writer) error { return output.EncodeYAML(out, w.res) }

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
