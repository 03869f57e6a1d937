package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"helm.sh/helm/v4/pkg/provenance"

	"github.com/berthdev/berth/internal/chartpkg"
	"github.com/berthdev/berth/internal/source"
)

type packageFlags struct {
	opts             chartpkg.Options
	sign             bool
	key, keyring     string
	passphraseFile   string
	dependencyUpdate bool
	deps             source.DependencyOptions
}

func newPackageCommand(streams Streams) *cobra.Command {
	var flags packageFlags
	cmd := &cobra.Command{
		Use:   "package [CHART_PATH] [...]",
		Short: "package a chart directory into a chart archive",
		Long: `
This command packages a chart into a versioned chart archive file. If a path
is given, this will look at that path for a chart (which must contain a
Chart.yaml file) and then package that directory.

Versioned chart archives are used by Helm package repositories.

To sign a chart, use the '--sign' flag. In most cases, you should also
provide '--keyring path/to/secret/keys' and '--key keyname'.

  $ berth package --sign ./mychart --key mykey --keyring ~/.gnupg/secring.gpg

If '--keyring' is not specified, berth usually defaults to the public keyring
unless your environment is otherwise configured.

Unlike 'helm package', the archive keeps Chart.yaml as it is written: fields
Helm does not know, such as the 'depends-on' of a dependency that orders
subcharts, are kept, and --version and --app-version change only those values.
With --dependency-update, every download is bounded in time and stops at Ctrl-C.
`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("need at least one argument, the path to the chart")
			}
			if err := flags.complete(streams); err != nil {
				return err
			}
			for _, dir := range args {
				path, err := packageOne(cmd, streams, dir, flags)
				if err != nil {
					return err
				}
				fmt.Fprintf(streams.Out, "Successfully packaged chart and saved it to: %s\n", path)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&flags.sign, "sign", false, "use a PGP private key to sign this package")
	f.StringVar(&flags.key, "key", "", "name of the key to use when signing. Used if --sign is true")
	f.StringVar(&flags.keyring, "keyring", defaultKeyring(), "location of a public keyring")
	f.StringVar(&flags.passphraseFile, "passphrase-file", "", `location of a file which contains the passphrase for the signing key. Use "-" in order to read from stdin.`)
	f.StringVar(&flags.opts.Version, "version", "", "set the version on the chart to this semver version")
	f.StringVar(&flags.opts.AppVersion, "app-version", "", "set the appVersion on the chart to this version")
	f.StringVarP(&flags.opts.Destination, "destination", "d", ".", "location to write the chart.")
	f.BoolVarP(&flags.dependencyUpdate, "dependency-update", "u", false, `update dependencies from "Chart.yaml" to dir "charts/" before packaging`)
	d := &flags.deps
	f.StringVar(&d.Username, "username", "", "chart repository username where to locate the requested chart")
	f.StringVar(&d.Password, "password", "", "chart repository password where to locate the requested chart")
	f.StringVar(&d.CertFile, "cert-file", "", "identify HTTPS client using this SSL certificate file")
	f.StringVar(&d.KeyFile, "key-file", "", "identify HTTPS client using this SSL key file")
	f.BoolVar(&d.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "skip tls certificate checks for the chart download")
	f.BoolVar(&d.PlainHTTP, "plain-http", false, "use insecure HTTP connections for the chart download")
	f.StringVar(&d.CaFile, "ca-file", "", "verify certificates of HTTPS-enabled servers using this CA bundle")
	return cmd
}

// complete checks the signing flags and reads SOURCE_DATE_EPOCH, as helm package does.
func (f *packageFlags) complete(streams Streams) error {
	epoch, err := sourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	f.opts.SourceDateEpoch = epoch
	f.deps.Keyring = f.keyring
	if !f.sign {
		return nil
	}
	if f.key == "" {
		return errors.New("--key is required for signing a package")
	}
	if f.keyring == "" {
		return errors.New("--keyring is required for signing a package")
	}
	f.opts.Signing = &chartpkg.Signing{Key: f.key, Keyring: f.keyring, Passphrase: passphrase(f.passphraseFile, streams)}
	return nil
}

// packageOne updates the dependencies of the chart directory dir when asked, through berth's
// bounded fetch, then packages it.
func packageOne(cmd *cobra.Command, streams Streams, dir string, flags packageFlags) (string, error) {
	if err := chartpkg.CheckDir(dir); err != nil {
		return "", explainChartError(err)
	}
	if flags.dependencyUpdate {
		r, err := newResolver(cmd, streams, source.Options{})
		if err != nil {
			return "", err
		}
		if err := r.Dependencies(cmd.Context(), dir, flags.deps, source.DependencyUpdate); err != nil {
			return "", explainDependencyError(err)
		}
	}
	path, err := chartpkg.Package(dir, flags.opts)
	return path, explainChartError(err)
}

// passphrase returns the passphrase of the signing key as helm package reads it: the first
// line of file ("-": of standard input), read once for every chart; without a file, typed at
// the terminal.
func passphrase(file string, streams Streams) provenance.PassphraseFetcher {
	if file == "" {
		return func(name string) ([]byte, error) {
			fmt.Fprintf(streams.Out, "Password for key %q >  ", name)
			pw, err := term.ReadPassword(int(os.Stdin.Fd()))
			fmt.Fprintln(streams.Out)
			return pw, err
		}
	}
	read := sync.OnceValues(func() ([]byte, error) {
		var r io.Reader = streams.In
		if file != "-" {
			f, err := os.Open(file)
			if err != nil {
				return nil, fmt.Errorf("read --passphrase-file: %w", err)
			}
			defer f.Close()
			r = f
		}
		line, _, err := bufio.NewReader(r).ReadLine()
		if err != nil {
			return nil, fmt.Errorf("read the passphrase from %s: %w", passphraseSource(file), err)
		}
		return line, nil
	})
	return func(string) ([]byte, error) { return read() }
}

func passphraseSource(file string) string {
	if file == "-" {
		return "standard input"
	}
	return file
}

// sourceDateEpoch parses SOURCE_DATE_EPOCH as helm package does; empty is none.
func sourceDateEpoch(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	epoch, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("invalid SOURCE_DATE_EPOCH: %w", err)
	}
	if epoch < 0 {
		return nil, errors.New("invalid SOURCE_DATE_EPOCH: must not be negative")
	}
	t := time.Unix(epoch, 0).UTC()
	return &t, nil
}
