package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berthdev/berth/internal/plugins"
)

type pluginPackageFlags struct {
	sign                 bool
	key, keyring         string
	passphraseFile, dest string
}

func newPluginPackageCommand(streams Streams) *cobra.Command {
	var flags pluginPackageFlags
	cmd := &cobra.Command{
		Use:   "package [PATH]",
		Short: "package a plugin directory into a plugin archive",
		Long: `
This command packages a Helm plugin directory into a tarball.

By default, the command will generate a provenance file signed with a PGP key.
This ensures the plugin can be verified after installation.

Use --sign=false to skip signing (not recommended for distribution).

The plugin is loaded, and the key read and decrypted, before anything is
written: a directory that is no plugin, or a key that cannot sign, writes
nothing.
`,
		Args: onePath,
		RunE: func(_ *cobra.Command, args []string) error {
			return packagePlugin(streams, args[0], flags)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&flags.sign, "sign", true, "use a PGP private key to sign this plugin")
	f.StringVar(&flags.key, "key", "", "name of the key to use when signing. Used if --sign is true")
	f.StringVar(&flags.keyring, "keyring", defaultKeyring(), "location of a public keyring")
	f.StringVar(&flags.passphraseFile, "passphrase-file", "", `location of a file which contains the passphrase for the signing key. Use "-" to read from stdin.`)
	f.StringVarP(&flags.dest, "destination", "d", ".", "location to write the plugin tarball.")
	return cmd
}

func packagePlugin(streams Streams, dir string, flags pluginPackageFlags) error {
	opts := plugins.PackageOptions{Dir: dir, Destination: flags.dest}
	if flags.sign {
		opts.Signing = &plugins.Signing{Key: flags.key, Keyring: flags.keyring, Passphrase: passphrase(flags.passphraseFile, streams)}
	}
	res, err := plugins.Package(opts)
	if err != nil {
		return explainPluginPackageError(fmt.Errorf("package plugin %s: %w", dir, err))
	}
	if !flags.sign {
		fmt.Fprint(streams.Out, "WARNING: Skipping plugin signing. This is not recommended for plugins intended for distribution.\n")
	}
	if res.Provenance != "" {
		fmt.Fprintf(streams.Out, "Successfully signed. Signature written to: %s\n", res.Provenance)
	}
	fmt.Fprintf(streams.Out, "Successfully packaged plugin and saved it to: %s\n", res.Archive)
	return nil
}

// explainPluginPackageError adds what to do to the errors of packaging a plugin.
func explainPluginPackageError(err error) error {
	var keyErr *plugins.KeyError
	switch {
	case errors.As(err, &keyErr) && keyErr.Key == "":
		return &hintedError{err: err, hint: "name the signing key with --key (and the keyring of secret keys with --keyring), or use --sign=false"}
	case errors.As(err, &keyErr):
		return &hintedError{err: err, hint: "give the keyring that holds the key's secret part with --keyring, and its name (or a part of it) with --key; list them with 'gpg --list-secret-keys'"}
	case errors.Is(err, plugins.ErrNotDirectory):
		return &hintedError{err: err, hint: "give the plugin's directory (the one with plugin.yaml)"}
	}
	return explainPluginError(err)
}

// onePath requires exactly one argument, with helm's message.
func onePath(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%q requires 1 argument\n\nUsage:  %s", cmd.CommandPath(), cmd.UseLine())
	}
	return nil
}
