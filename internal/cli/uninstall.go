package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/lifecycle"
)

type uninstallFlags struct {
	wait        lifecycle.WaitOptions
	cascade     string
	keepHistory bool
	noHooks     bool
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
				Name: args[0], WaitOptions: flags.wait, Cascade: prop, KeepHistory: flags.keepHistory, NoHooks: flags.noHooks,
			})
			if res != nil && len(res.Kept) > 0 {
				fmt.Fprintln(streams.Out, "These resources were kept due to the resource policy:")
				for _, id := range res.Kept {
					fmt.Fprintf(streams.Out, "[%s] %s\n", id.Kind, id)
				}
				fmt.Fprintln(streams.Out)
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(streams.Out, "release \"%s\" uninstalled\n", args[0])
			return err
		},
	}
	f := cmd.Flags()
	addWaitFlags(f, &flags.wait, true)
	f.StringVar(&flags.cascade, "cascade", "foreground", `how dependents are deleted: "foreground" (the object goes after its dependents), "background" or "orphan"`)
	f.BoolVar(&flags.keepHistory, "keep-history", false, "remove all associated resources and mark the release as deleted, but retain the release history")
	f.BoolVar(&flags.noHooks, "no-hooks", false, "prevent hooks from running during uninstallation")
	return cmd
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
