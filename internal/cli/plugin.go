package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/gosuri/uitable"
	"github.com/spf13/cobra"
	helmcli "helm.sh/helm/v4/pkg/cli"

	"github.com/berthdev/berth/internal/plugins"
)

func newPluginCommand(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "install, list, or uninstall Helm plugins",
		Long: `Manage client-side Helm plugins.

berth keeps plugins where helm does (HELM_PLUGINS): a plugin installed with
'helm plugin install' is listed by berth, and the other way round. Getter
plugins (getter/v1) serve chart references of their URL schemes to every
berth command that fetches a chart; post-renderer plugins serve
--post-renderer.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newPluginListCommand(streams), newPluginInstallCommand(streams),
		newPluginUninstallCommand(streams), newPluginUpdateCommand(streams),
		newPluginPackageCommand(streams), newPluginVerifyCommand(streams))
	return cmd
}

func newPluginListCommand(streams Streams) *cobra.Command {
	var typ string
	cmd := &cobra.Command{
		Use:               "list",
		Aliases:           []string{"ls"},
		Short:             "list installed Helm plugins",
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			found, err := plugins.Find(helmSettings(cmd).PluginsDirectory, typ)
			if err != nil {
				return err
			}
			warnBroken(streams, found)
			table := uitable.New()
			table.AddRow("NAME", "VERSION", "TYPE", "APIVERSION", "PROVENANCE", "SOURCE")
			for _, p := range found.Plugins {
				source := p.SourceURL
				if source == "" {
					source = "unknown"
				}
				table.AddRow(p.Name, p.Version, p.Type, p.APIVersion, p.Provenance(), source)
			}
			_, err = fmt.Fprintln(streams.Out, table)
			return err
		},
	}
	cmd.Flags().StringVar(&typ, "type", "", "Plugin type")
	return cmd
}

// warnBroken says on stderr which plugins did not load, as helm warns of them.
func warnBroken(streams Streams, found plugins.Found) {
	for _, err := range found.Broken {
		fmt.Fprintf(streams.ErrOut, "WARNING: failed to load plugin (ignoring): %v\n", err)
	}
}

func newPluginUninstallCommand(streams Streams) *cobra.Command {
	return &cobra.Command{
		Use:               "uninstall <plugin>...",
		Aliases:           []string{"rm", "remove"},
		Short:             "uninstall one or more Helm plugins",
		Args:              pluginNamesArgs("uninstall"),
		ValidArgsFunction: completePluginNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			settings := helmSettings(cmd)
			return eachPlugin(settings, args, func(p *plugins.Plugin) error {
				if err := plugins.Uninstall(cmd.Context(), p, filepath.Dir(p.Dir), streams.ErrOut); err != nil {
					return fmt.Errorf("failed to uninstall plugin %s, got error (%w)", p.Name, err)
				}
				fmt.Fprintf(streams.Out, "Uninstalled plugin: %s\n", p.Name)
				return nil
			})
		},
	}
}

func newPluginUpdateCommand(streams Streams) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:               "update <plugin>...",
		Aliases:           []string{"up"},
		Short:             "update one or more Helm plugins",
		Long:              "Update plugins installed from a git repository: each is pulled (within --timeout) and its update hook run.",
		Args:              pluginNamesArgs("update"),
		ValidArgsFunction: completePluginNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return eachPlugin(helmSettings(cmd), args, func(p *plugins.Plugin) error {
				if err := plugins.Update(ctx, p, streams.ErrOut); err != nil {
					return fmt.Errorf("failed to update plugin %s, got error (%w)", p.Name, err)
				}
				fmt.Fprintf(streams.Out, "Updated plugin: %s\n", p.Name)
				return nil
			})
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", pluginTimeout, "time to wait for the plugins' repositories to be fetched and their hooks to run")
	return cmd
}

// pluginNamesArgs requires at least one plugin name, with helm's message.
func pluginNamesArgs(verb string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("please provide plugin name to %s", verb)
		}
		return nil
	}
}

// eachPlugin calls fn with each installed plugin names names, in order, and joins the errors:
// a plugin that is not installed is one of them.
func eachPlugin(settings *helmcli.EnvSettings, names []string, fn func(*plugins.Plugin) error) error {
	var errs []error
	for _, name := range names {
		p, err := plugins.Named(settings.PluginsDirectory, name)
		if err == nil {
			err = fn(p)
		}
		if err != nil {
			errs = append(errs, explainPluginError(err))
		}
	}
	return errors.Join(errs...)
}

// completePluginNames completes the names of the installed plugins not given yet.
func completePluginNames(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	found, err := plugins.Find(helmSettings(cmd).PluginsDirectory, "")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, p := range found.Plugins {
		if !slices.Contains(args, p.Name) {
			names = append(names, p.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// explainPluginError adds what to do to the errors of installing, updating and removing plugins.
func explainPluginError(err error) error {
	var notFound *plugins.NotFoundError
	var exists *plugins.ExistsError
	switch {
	case errors.As(err, &notFound):
		return &hintedError{err: err, hint: "list the installed plugins with `berth plugin list`"}
	case errors.As(err, &exists):
		return &hintedError{err: err, hint: fmt.Sprintf("remove it first with `berth plugin uninstall %s`, or update it with `berth plugin update %s`", exists.Name, exists.Name)}
	case errors.Is(err, plugins.ErrNoMetadata):
		return &hintedError{err: err, hint: "a plugin is a directory with a plugin.yaml: give one"}
	case errors.Is(err, plugins.ErrNotVerifiable):
		return &hintedError{err: err, hint: "Use --verify=false to skip verification"}
	case errors.Is(err, plugins.ErrNoSuchSource):
		return &hintedError{err: err, hint: "give a plugin directory, an archive (.tgz), an archive's URL or a git repository's URL"}
	case errors.Is(err, plugins.ErrNoSource):
		return &hintedError{err: err, hint: "only a plugin installed from a git repository can be updated: uninstall it and install it again"}
	case errors.Is(err, plugins.ErrModified):
		return &hintedError{err: err, hint: "commit or undo the changes in the plugin's directory first"}
	}
	return err
}
