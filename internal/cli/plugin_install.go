package cli

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/helmpath"

	"github.com/berthdev/berth/internal/plugins"
	"github.com/berthdev/berth/internal/source"
)

// pluginTimeout bounds a plugin's install or update: downloads, git and hooks.
const pluginTimeout = 5 * time.Minute

type pluginInstallFlags struct {
	version, keyring          string
	verify                    bool
	certFile, keyFile, caFile string
	insecureSkipTLSVerify     bool
	plainHTTP                 bool
	username, password        string
	timeout                   time.Duration
}

func newPluginInstallCommand(streams Streams) *cobra.Command {
	var flags pluginInstallFlags
	cmd := &cobra.Command{
		Use:     "install [options] <path|url>",
		Aliases: []string{"add"},
		Short:   "install a Helm plugin",
		Long: `This command allows you to install a plugin from a url to a VCS repo or a local path.

By default, plugin signatures are verified before installation when installing from
tarballs (.tgz or .tar.gz). A corresponding .prov file must be available alongside
the tarball; installation will fail if it is missing or invalid.
For local development, plugins installed from local directories are automatically
treated as "local dev" and do not require signatures.
Use --verify=false to explicitly skip signature verification (NOT recommended).

A plugin in an OCI registry is installed from oci://REGISTRY/REPOSITORY:TAG
(or oci://REGISTRY/REPOSITORY with --version TAG), under the repository's last
component as its name, with the credentials of 'berth registry login' or
--username and --password.

The plugin goes where helm keeps plugins (the first directory of HELM_PLUGINS).
Downloads, registry pulls and git run within --timeout; a plugin that cannot be
fetched or verified, or whose plugin.yaml does not load, leaves the plugins
directory as it was.`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return nil, cobra.ShellCompDirectiveDefault
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return installPlugin(cmd, streams, args[0], flags)
		},
	}
	f := cmd.Flags()
	f.StringVar(&flags.version, "version", "", "specify a version constraint. If this is not specified, the latest version is installed")
	f.BoolVar(&flags.verify, "verify", true, "verify the plugin signature before installing")
	f.StringVar(&flags.keyring, "keyring", defaultKeyring(), "location of public keys used for verification")
	f.StringVar(&flags.certFile, "cert-file", "", "identify registry client using this SSL certificate file")
	f.StringVar(&flags.keyFile, "key-file", "", "identify registry client using this SSL key file")
	f.StringVar(&flags.caFile, "ca-file", "", "verify certificates of HTTPS-enabled servers using this CA bundle")
	f.BoolVar(&flags.insecureSkipTLSVerify, "insecure-skip-tls-verify", false, "skip tls certificate checks for the plugin download")
	f.BoolVar(&flags.plainHTTP, "plain-http", false, "use insecure HTTP connections for the plugin download")
	f.StringVar(&flags.username, "username", "", "registry username")
	f.StringVar(&flags.password, "password", "", "registry password")
	f.DurationVar(&flags.timeout, "timeout", pluginTimeout, "time to wait for the plugin to be downloaded, pulled or cloned and its install hook to run")
	return cmd
}

func installPlugin(cmd *cobra.Command, streams Streams, src string, flags pluginInstallFlags) error {
	settings := helmSettings(cmd)
	kind := plugins.KindOf(src)
	verify := flags.verify
	switch {
	case kind == plugins.SourceNone:
		return explainPluginError(fmt.Errorf("install plugin %s: %w", src, plugins.ErrNoSuchSource))
	case kind == plugins.SourceDir:
		verify = false
		fmt.Fprint(streams.Out, "Installing plugin from local directory (development mode)\n")
	case verify && kind != plugins.SourceArchive && kind != plugins.SourceURL && kind != plugins.SourceOCI:
		return explainPluginError(plugins.ErrNotVerifiable)
	case !verify:
		fmt.Fprint(streams.Out, "WARNING: Skipping plugin signature verification\n")
	}
	client, err := pluginClient(flags)
	if err != nil {
		return err
	}
	opts := plugins.InstallOptions{
		Source: src, Version: flags.version, Dir: installDir(settings.PluginsDirectory),
		Verify: verify, Keyring: flags.keyring, Client: client, Hooks: streams.ErrOut,
	}
	install := plugins.Install
	if kind == plugins.SourceOCI {
		reg, err := pluginRegistry(settings, source.OCIHost(src), flags)
		if err != nil {
			return err
		}
		install = func(ctx context.Context, opts plugins.InstallOptions) (*plugins.Installed, error) {
			return plugins.InstallOCI(ctx, opts, reg)
		}
	}
	if verify {
		fmt.Fprint(streams.Out, "Verifying plugin signature...\n")
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), flags.timeout)
	defer cancel()
	res, err := install(ctx, opts)
	if err != nil {
		if ctx.Err() != nil && cmd.Context().Err() == nil {
			return fmt.Errorf("install plugin %s: not done within --timeout %s: %w", src, flags.timeout, err)
		}
		return explainOCIPluginError(fmt.Errorf("install plugin %s: %w", src, err))
	}
	if v := res.Verification; v != nil {
		for name := range v.SignedBy.Identities {
			fmt.Fprintf(streams.Out, "Signed by: %s\n", name)
		}
		fmt.Fprintf(streams.Out, "Using Key With Fingerprint: %X\n", v.SignedBy.PrimaryKey.Fingerprint)
		fmt.Fprintf(streams.Out, "Plugin Hash Verified: %s\n", v.FileHash)
	}
	fmt.Fprintf(streams.Out, "Installed plugin: %s\n", res.Plugin.Name)
	return nil
}

// pluginClient is the HTTP client of a plugin archive's download, with the TLS flags.
func pluginClient(flags pluginInstallFlags) (*http.Client, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	opts := source.RegistryOptions{CertFile: flags.certFile, KeyFile: flags.keyFile, CAFile: flags.caFile, InsecureSkipTLSVerify: flags.insecureSkipTLSVerify}
	if opts.CertFile != "" || opts.KeyFile != "" || opts.CAFile != "" || opts.InsecureSkipTLSVerify {
		conf, err := source.TLSConfig(opts)
		if err != nil {
			return nil, err
		}
		t.TLSClientConfig = conf
	}
	t.ResponseHeaderTimeout = 30 * time.Second
	return &http.Client{Transport: t, Timeout: flags.timeout}, nil
}

// installDir is the directory plugins are installed into: the first of HELM_PLUGINS.
func installDir(dirs string) string {
	for _, d := range filepath.SplitList(dirs) {
		if d != "" {
			return d
		}
	}
	return helmpath.DataPath("plugins")
}
