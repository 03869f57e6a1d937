package cli

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/util/homedir"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/source"
)

// addChartSourceFlags adds Helm's flags that say where a chart comes from and how to fetch it,
// with Helm's names and help text.
func addChartSourceFlags(f *pflag.FlagSet, o *source.Options) {
	f.BoolVar(&o.Devel, "devel", false, "use development versions, too. Equivalent to version '>0.0.0-0'. If --version is set, this is ignored")
	addChartPathFlags(f, o)
}

// addChartPathFlags adds Helm's chart path flags (--version, --repo, credentials, TLS,
// --verify), with Helm's names and help text.
func addChartPathFlags(f *pflag.FlagSet, o *source.Options) {
	f.StringVar(&o.Version, "version", "", "specify a version constraint for the chart version to use. This constraint can be a specific tag (e.g. 1.1.1) or it may reference a valid range (e.g. ^2.0.0). If this is not specified, the latest version is used")
	f.BoolVar(&o.Verify, "verify", false, "verify the package before using it")
	f.StringVar(&o.Keyring, "keyring", defaultKeyring(), "location of public keys used for verification")
	f.StringVar(&o.RepoURL, "repo", "", "chart repository url where to locate the requested chart")
	f.StringVar(&o.Username, "username", "", "chart repository username where to locate the requested chart")
	f.StringVar(&o.Password, "password", "", "chart repository password where to locate the requested chart")
	f.StringVar(&o.CertFile, "cert-file", "", "identify HTTPS client using this SSL certificate file")
	f.StringVar(&o.KeyFile, "key-file", "", "identify HTTPS client using this SSL key file")
	f.BoolVar(&o.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "skip tls certificate checks for the chart download")
	f.BoolVar(&o.PlainHTTP, "plain-http", false, "use insecure HTTP connections for the chart download")
	f.StringVar(&o.CaFile, "ca-file", "", "verify certificates of HTTPS-enabled servers using this CA bundle")
	f.BoolVar(&o.PassCredentialsAll, "pass-credentials", false, "pass credentials to all domains")
	addSignatureFlags(f)
}

// addDependencyUpdateFlag adds Helm's --dependency-update of install, upgrade and template.
func addDependencyUpdateFlag(f *pflag.FlagSet, o *source.Options) {
	f.BoolVar(&o.DependencyUpdate, "dependency-update", false, "update dependencies if they are missing before installing the chart")
}

// newResolver returns a resolver of chart references with the user's Helm settings and opts.
func newResolver(cmd *cobra.Command, streams Streams, opts source.Options) (*source.Resolver, error) {
	if opts.Cosign == nil && opts.Notation == nil {
		cosign, err := cosignOptions(cmd.Flags(), opts.Verify)
		if err != nil {
			return nil, err
		}
		notation, err := notationOptions(cmd.Flags(), opts.Verify, cosign != nil)
		if err != nil {
			return nil, err
		}
		opts.Cosign, opts.Notation = cosign, notation
	}
	r, err := source.NewResolver(helmSettings(cmd), opts, streams.ErrOut)
	if err != nil {
		return nil, err
	}
	r.SourceDateEpoch = os.Getenv("SOURCE_DATE_EPOCH")
	return r, nil
}

// locateChart returns the local path of the chart ref names, fetching it into Helm's cache
// with the user's Helm settings when it is not on disk.
func locateChart(ctx context.Context, cmd *cobra.Command, streams Streams, ref string, opts source.Options) (string, error) {
	r, err := newResolver(cmd, streams, opts)
	if err != nil {
		return "", err
	}
	path, err := r.Locate(ctx, ref)
	return path, explainSourceError(err)
}

// loadChart locates the chart ref names and loads it; with --verify, it returns the proof of
// its verification too.
func loadChart(ctx context.Context, cmd *cobra.Command, streams Streams, ref string, opts source.Options) (*chartv2.Chart, *release.Provenance, error) {
	r, err := newResolver(cmd, streams, opts)
	if err != nil {
		return nil, nil, err
	}
	ch, proof, err := r.LoadVerified(ctx, ref)
	if err != nil {
		return nil, nil, explainSourceError(err)
	}
	return ch, proof, nil
}

// defaultKeyring is Helm's default keyring for --verify: GnuPG's public keyring in GNUPGHOME or
// ~/.gnupg, the legacy pubring.gpg when it exists, else pubring.kbx. It is looked for once: every
// command that has --keyring shows it as its default.
var defaultKeyring = sync.OnceValue(func() string {
	home := os.Getenv("GNUPGHOME")
	if home == "" {
		home = filepath.Join(homedir.HomeDir(), ".gnupg")
	}
	legacy := filepath.Join(home, "pubring.gpg")
	if _, err := os.Stat(legacy); err == nil {
		return legacy
	}
	return filepath.Join(home, "pubring.kbx")
})
