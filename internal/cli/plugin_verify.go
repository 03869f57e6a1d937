package cli

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/berthdev/berth/internal/plugins"
)

func newPluginVerifyCommand(streams Streams) *cobra.Command {
	var keyring string
	cmd := &cobra.Command{
		Use:   "verify [PATH]",
		Short: "verify that a plugin at the given path has been signed and is valid",
		Long: `
This command verifies that a Helm plugin has a valid provenance file,
and that the provenance file is signed by a trusted PGP key.

It supports plugin tarballs (.tgz or .tar.gz files), with their provenance
file (PATH.prov) beside them.

To generate a signed plugin, use the 'berth plugin package --sign' command.
`,
		Args: onePath,
		RunE: func(_ *cobra.Command, args []string) error {
			v, err := plugins.VerifyArchive(args[0], keyring)
			if err != nil {
				return explainPluginVerifyError(fmt.Errorf("verify plugin %s: %w", args[0], err), args[0])
			}
			for name := range v.SignedBy.Identities {
				fmt.Fprintf(streams.Out, "Signed by: %v\n", name)
			}
			fmt.Fprintf(streams.Out, "Using Key With Fingerprint: %X\n", v.SignedBy.PrimaryKey.Fingerprint)
			fmt.Fprintf(streams.Out, "Plugin Hash Verified: %s\n", v.FileHash)
			return nil
		},
	}
	cmd.Flags().StringVar(&keyring, "keyring", defaultKeyring(), "keyring containing public keys")
	return cmd
}

// explainPluginVerifyError adds what to do to the errors of verifying a plugin archive.
func explainPluginVerifyError(err error, path string) error {
	var noProv *plugins.NoProvenanceError
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, plugins.ErrVerifyDirectory), errors.Is(err, plugins.ErrNotTarball):
		return &hintedError{err: err, hint: "give the plugin's archive (NAME-VERSION.tgz), as 'berth plugin package' writes it"}
	case errors.As(err, &noProv):
		return &hintedError{err: err, hint: "put the archive's provenance file beside it, or sign it with 'berth plugin package --sign'"}
	case errors.As(err, &pathErr) && pathErr.Path == path:
		return &hintedError{err: err, hint: "give the path of a plugin archive (.tgz)"}
	}
	return err
}
