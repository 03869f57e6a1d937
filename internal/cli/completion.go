package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthdev/berth/internal/release"
)

const (
	noDescFlagName = "no-descriptions"
	noDescFlagText = "disable completion descriptions"
)

// completionShell is one shell berth writes a completion script for.
type completionShell struct {
	name, short, long string
	write             func(root *cobra.Command, out io.Writer, descriptions bool) error
}

// completionShells are the shells berth writes completion scripts for.
func completionShells() []completionShell {
	return []completionShell{
		{"bash", "generate autocompletion script for bash", `Generate the autocompletion script for berth for the bash shell.

To load completions in your current shell session:

    source <(berth completion bash)

To load completions for every new session, execute once:
- Linux:

      berth completion bash > /etc/bash_completion.d/berth

- MacOS:

      berth completion bash > /usr/local/etc/bash_completion.d/berth`,
			func(root *cobra.Command, out io.Writer, desc bool) error { return root.GenBashCompletionV2(out, desc) }},
		{"zsh", "generate autocompletion script for zsh", `Generate the autocompletion script for berth for the zsh shell.

To load completions in your current shell session:

    source <(berth completion zsh)

To load completions for every new session, execute once:

    berth completion zsh > "${fpath[1]}/_berth"`,
			func(root *cobra.Command, out io.Writer, desc bool) error {
				gen := root.GenZshCompletion
				if !desc {
					gen = root.GenZshCompletionNoDesc
				}
				if err := gen(out); err != nil {
					return err
				}
				// Sourcing the script must also register it.
				_, err := fmt.Fprint(out, "compdef _berth berth\n")
				return err
			}},
		{"fish", "generate autocompletion script for fish", `Generate the autocompletion script for berth for the fish shell.

To load completions in your current shell session:

    berth completion fish | source

To load completions for every new session, execute once:

    berth completion fish > ~/.config/fish/completions/berth.fish

You will need to start a new shell for this setup to take effect.`,
			func(root *cobra.Command, out io.Writer, desc bool) error { return root.GenFishCompletion(out, desc) }},
		{"powershell", "generate autocompletion script for powershell", `Generate the autocompletion script for powershell.

To load completions in your current shell session:
PS C:\> berth completion powershell | Out-String | Invoke-Expression

To load completions for every new session, add the output of the above command
to your powershell profile.`,
			func(root *cobra.Command, out io.Writer, desc bool) error {
				if desc {
					return root.GenPowerShellCompletionWithDesc(out)
				}
				return root.GenPowerShellCompletion(out)
			}},
	}
}

func newCompletionCommand(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "completion",
		Short: "generate autocompletion scripts for the specified shell",
		Long: `Generate autocompletion scripts for berth for the specified shell.

Release names are completed from the releases of the namespace the flags select.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return fmt.Errorf("no completion for shell %q: want bash, zsh, fish or powershell", args[0])
		},
	}
	for _, sh := range completionShells() {
		var noDesc bool
		sub := &cobra.Command{
			Use:               sh.name,
			Short:             sh.short,
			Long:              sh.long,
			Args:              cobra.NoArgs,
			ValidArgsFunction: cobra.NoFileCompletions,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return sh.write(cmd.Root(), streams.Out, !noDesc)
			},
		}
		sub.Flags().BoolVar(&noDesc, noDescFlagName, false, noDescFlagText)
		cmd.AddCommand(sub)
	}
	return cmd
}

// completionTimeout bounds how long completing a name may wait for the cluster.
const completionTimeout = 5 * time.Second

// completionStore is the release store of the namespace the flags select, without checking
// that the cluster answers.
func completionStore(cmd *cobra.Command) (release.Store, error) {
	clients, err := kubeFlags(cmd).Load()
	if err != nil {
		return nil, err
	}
	return storeOf(clients)
}

// releaseNames lists the releases of the namespace as completions, "NAME\tCHART-VERSION -> STATUS"
// as Helm does, leaving out those in skip. Without a cluster there is nothing to complete.
func releaseNames(cmd *cobra.Command, skip []string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(contextOf(cmd), completionTimeout)
	defer cancel()
	store, err := completionStore(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	rels, err := store.List(ctx, release.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var choices []string
	for _, r := range rels {
		if !slices.Contains(skip, r.Name) {
			choices = append(choices, fmt.Sprintf("%s\t%s -> %s", r.Name, chartName(r.Chart), r.Info.Status))
		}
	}
	return choices, cobra.ShellCompDirectiveNoFileComp
}

// revisions lists the revisions of a release as completions, "REVISION\tApp: V, Chart: NAME-V".
func revisions(cmd *cobra.Command, name string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(contextOf(cmd), completionTimeout)
	defer cancel()
	store, err := completionStore(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	history, err := store.History(ctx, name)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var choices []string
	for _, r := range history {
		choices = append(choices, fmt.Sprintf("%s\tApp: %s, Chart: %s", strconv.Itoa(r.Version), appVersion(r.Chart), chartName(r.Chart)))
	}
	return choices, cobra.ShellCompDirectiveNoFileComp
}

func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// completeReleaseName completes the one release name a command takes.
func completeReleaseName(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) != 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return releaseNames(cmd, nil)
}

// completeReleaseNames completes release names for a command that takes several.
func completeReleaseNames(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	return releaseNames(cmd, args)
}

// completeReleaseThenChart completes a release name, then a chart (a path).
func completeReleaseThenChart(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return releaseNames(cmd, nil)
	case 1:
		return nil, cobra.ShellCompDirectiveDefault
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeReleaseThenRevision completes a release name, then one of its revisions.
func completeReleaseThenRevision(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return releaseNames(cmd, nil)
	case 1:
		return revisions(cmd, args[0])
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeRevisionFlag completes --revision with the revisions of the release named first.
func completeRevisionFlag(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("revision", func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 1 {
			return revisions(cmd, args[0])
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	})
}
