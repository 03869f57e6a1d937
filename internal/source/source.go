// Package source turns a chart reference, as a Helm user types it, into a loaded chart: a
// directory, a packaged .tgz, repo/chart from the user's Helm repositories, a chart in a
// repository given by URL (--repo), an https://…/chart-1.2.3.tgz URL, or oci://host/path/chart.
// Resolution, download, caching and provenance checks are Helm's own (its action, downloader,
// getter, repo and registry packages), driven by Helm's settings; this package only wires them
// and says what failed.
package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	helmcli "helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/registry"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/chart"
)

// Options say where and how to fetch a chart: Helm's chart path options (--version, --repo,
// --username, --password, --ca-file, --cert-file, --key-file, --insecure-skip-tls-verify,
// --plain-http, --pass-credentials, --verify, --keyring) and --devel.
type Options struct {
	action.ChartPathOptions
	// Devel allows development versions (alpha, beta, release candidates) when Version is empty:
	// Helm's version '>0.0.0-0'.
	Devel bool
}

// version is the version constraint Helm resolves with.
func (o Options) version() string {
	if o.Version == "" && o.Devel {
		return ">0.0.0-0"
	}
	return o.Version
}

// Resolver fetches charts with Helm's settings (repositories.yaml, the repository and content
// caches, registry credentials) and one registry client.
type Resolver struct {
	Settings *helmcli.EnvSettings
	Options  Options
	// Registry is the client for oci:// references; NewResolver makes it from Options.
	Registry *registry.Client
}

// NewResolver returns a resolver of references with opts; out receives what Helm's registry
// client reports (pulled digests and the like).
func NewResolver(settings *helmcli.EnvSettings, opts Options, out io.Writer) (*Resolver, error) {
	r := &Resolver{Settings: settings, Options: opts}
	rc, err := NewRegistryClient(settings, r.registryOptions(), out)
	if err != nil {
		return nil, err
	}
	r.Registry = rc
	return r, nil
}

// Locate returns the local path of the chart ref names: ref itself for a directory or archive
// on disk, otherwise the archive Helm downloaded into its cache (verified first with Verify).
func (r *Resolver) Locate(ctx context.Context, ref string) (string, error) {
	if IsLocal(ref, r.Options) && !r.namesRepository(ref) {
		if _, err := os.Stat(ref); err != nil {
			return "", &Error{Ref: ref, Err: fmt.Errorf("%w: give a chart directory, a packaged chart (.tgz), REPO/CHART of an added repository, a URL or an oci:// reference", err)}
		}
	}
	inst := action.NewInstall(&action.Configuration{})
	inst.ChartPathOptions = r.Options.ChartPathOptions
	inst.Version = r.Options.version()
	inst.SetRegistryClient(r.Registry)
	path, err := inst.LocateChart(ref, r.Settings)
	if err != nil {
		e := &Error{Ref: ref, Repo: r.Options.RepoURL, Version: inst.Version, Err: err}
		if registry.IsOCI(ref) {
			e.Host = OCIHost(ref)
			e.Kind = classify(err, hasCredentials(ctx, r.Settings, e.Host, r.registryOptions()))
		}
		return "", e
	}
	return path, nil
}

// OCIHost is the registry HOST[:PORT] of the oci:// reference ref.
func OCIHost(ref string) string {
	host, _, _ := strings.Cut(strings.TrimPrefix(ref, registry.OCIScheme+"://"), "/")
	return host
}

// registryOptions are the registry client options of r's chart path options.
func (r *Resolver) registryOptions() RegistryOptions {
	o := r.Options
	return RegistryOptions{
		CertFile: o.CertFile, KeyFile: o.KeyFile, CAFile: o.CaFile,
		InsecureSkipTLSVerify: o.InsecureSkipTLSVerify, PlainHTTP: o.PlainHTTP,
		Username: o.Username, Password: o.Password,
	}
}

// Load locates ref and loads the chart it names.
func (r *Resolver) Load(ctx context.Context, ref string) (*chartv2.Chart, error) {
	path, err := r.Locate(ctx, ref)
	if err != nil {
		return nil, err
	}
	return chart.Load(path)
}

// namesRepository reports whether ref is REPO/CHART of a repository in the user's
// repositories.yaml.
func (r *Resolver) namesRepository(ref string) bool {
	name, _, ok := strings.Cut(ref, "/")
	if !ok {
		return false
	}
	f, err := repo.LoadFile(r.Settings.RepositoryConfig)
	return err == nil && f.Has(name)
}

// IsLocal reports whether ref names a chart on disk rather than one to fetch.
func IsLocal(ref string, opts Options) bool {
	return opts.RepoURL == "" && !registry.IsOCI(ref) && !strings.Contains(ref, "://")
}

// RegistryOptions configure a client of OCI registries, as Helm's flags of the same names do.
type RegistryOptions struct {
	CertFile, KeyFile, CAFile string
	InsecureSkipTLSVerify     bool
	PlainHTTP                 bool
	Username, Password        string
}

// NewRegistryClient returns Helm's registry client with the user's registry credentials
// (settings.RegistryConfig, what `helm registry login` wrote) and opts.
func NewRegistryClient(settings *helmcli.EnvSettings, opts RegistryOptions, out io.Writer) (*registry.Client, error) {
	clientOpts := []registry.ClientOption{
		registry.ClientOptDebug(settings.Debug),
		registry.ClientOptEnableCache(true),
		registry.ClientOptWriter(out),
		registry.ClientOptCredentialsFile(settings.RegistryConfig),
		registry.ClientOptBasicAuth(opts.Username, opts.Password),
	}
	if opts.CertFile != "" && opts.KeyFile != "" || opts.CAFile != "" || opts.InsecureSkipTLSVerify {
		tlsConf, err := tlsConfig(opts)
		if err != nil {
			return nil, err
		}
		clientOpts = append(clientOpts, registry.ClientOptHTTPClient(&http.Client{
			Transport: &http.Transport{TLSClientConfig: tlsConf, Proxy: http.ProxyFromEnvironment},
		}))
	} else if opts.PlainHTTP {
		clientOpts = append(clientOpts, registry.ClientOptPlainHTTP())
	}
	rc, err := registry.NewClient(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return rc, nil
}

// tlsConfig is the TLS configuration of opts' client certificate, CA file and verification.
func tlsConfig(opts RegistryOptions) (*tls.Config, error) {
	conf := &tls.Config{InsecureSkipVerify: opts.InsecureSkipTLSVerify} //nolint:gosec // the user asked for it
	// As Helm: a certificate or a key alone is an error once TLS is configured at all.
	if opts.CertFile != "" || opts.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("registry client: load client certificate %s and key %s: %w", opts.CertFile, opts.KeyFile, err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("registry client: read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("registry client: CA file %s holds no PEM certificate", opts.CAFile)
		}
		conf.RootCAs = pool
	}
	return conf, nil
}
