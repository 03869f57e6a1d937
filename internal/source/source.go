// Package source turns a chart reference, as a Helm user types it, into a loaded chart: a
// directory, a packaged .tgz, repo/chart from the user's Helm repositories, a chart in a
// repository given by URL (--repo), an https://…/chart-1.2.3.tgz URL, or oci://host/path/chart.
// Resolution and provenance checks are Helm's own (its action, downloader, getter, repo and
// registry packages), driven by Helm's settings. The requests are bounded (Fetcher): in time, by
// the caller's context and per step of each request, and in size; indexes and charts are kept
// between fetches. The package says what failed, and where.
package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	helmchart "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/loader"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	helmcli "helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/helmpath"
	"helm.sh/helm/v4/pkg/registry"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/release"
)

// Options say where and how to fetch a chart: Helm's chart path options (--version, --repo,
// --username, --password, --ca-file, --cert-file, --key-file, --insecure-skip-tls-verify,
// --plain-http, --pass-credentials, --verify, --keyring) and --devel.
type Options struct {
	action.ChartPathOptions
	// Devel allows development versions (alpha, beta, release candidates) when Version is empty:
	// Helm's version '>0.0.0-0'.
	Devel bool
	// DependencyUpdate fetches the dependencies a chart directory declares but lacks, as Helm's
	// --dependency-update does, before the chart is loaded.
	DependencyUpdate bool
	// TLS holds a CA and a client certificate in memory (PEM), for a fetch of a repository given
	// by URL or of an OCI registry; the controller's come from a Secret. They add to the files
	// of ChartPathOptions, which take precedence.
	TLS TLSData
	// KeyringData is a public keyring in memory (the controller's comes from a Secret), used
	// with Verify where Keyring names no file.
	KeyringData []byte
	// Cosign verifies the cosign signatures of a chart of an OCI registry, with a public key or
	// keyless, instead of a provenance file (Verify): the chart is used only when a signature of
	// its manifest's digest verifies. A chart of a Helm repository or on disk fails with
	// ErrNotSigned.
	Cosign *provenance.CosignOptions
	// Notation verifies the Notary Project signatures of a chart of an OCI registry with a trust
	// policy and trust store, as Cosign does cosign's. At most one of the two is set.
	Notation *provenance.NotationOptions
}

// TLSData is TLS material in memory, PEM encoded.
type TLSData struct {
	// CA is the certificates (ca.crt) that verify the server, instead of the system's.
	CA []byte
	// Cert and Key are the client certificate (tls.crt) and its key (tls.key).
	Cert, Key []byte
}

// empty reports whether d holds nothing.
func (d TLSData) empty() bool { return len(d.CA) == 0 && len(d.Cert) == 0 && len(d.Key) == 0 }

// version is the version constraint Helm resolves with.
func (o Options) version() string {
	if o.Version == "" && o.Devel {
		return ">0.0.0-0"
	}
	return o.Version
}

// Resolver fetches charts with Helm's settings (repositories.yaml, the repository and content
// caches, registry credentials).
type Resolver struct {
	Settings *helmcli.EnvSettings
	Options  Options
	// Out receives the progress of fetching dependencies (DependencyUpdate) and the downloader's
	// warnings.
	Out io.Writer
	// SourceDateEpoch is SOURCE_DATE_EPOCH, the time stamped on the dependency archives Helm
	// writes; empty when unset.
	SourceDateEpoch string
	// Fetcher makes the requests of every chart not on disk: bounded in time (dial, TLS
	// handshake, response headers, the request as a whole, and the context of Locate) and in
	// size, through one transport whose idle connections serve the next fetch, with repository
	// indexes and charts kept between fetches. A process that fetches again and again (the
	// controller) shares one between its resolvers; NewResolver makes one of
	// DefaultFetchOptions. Without one, each fetch makes its own.
	Fetcher *Fetcher
}

// NewResolver returns a resolver of references with opts; out receives what Helm's registry
// client reports (pulled digests and the like).
func NewResolver(settings *helmcli.EnvSettings, opts Options, out io.Writer) (*Resolver, error) {
	return &Resolver{Settings: settings, Options: opts, Out: out, Fetcher: NewFetcher(DefaultFetchOptions())}, nil
}

// Locate returns the local path of the chart ref names: ref itself for a directory or archive
// on disk, otherwise the archive downloaded into Helm's content cache (verified first with
// Verify). The chart at the path loads. When Locate fails, it leaves Helm's caches as it found
// them: no archive, provenance file or directory of its own making remains.
//
// The fetch ends when ctx does: a server that does not answer before ctx's deadline fails it
// with a TimeoutError naming the server, of KindTimeout.
func (r *Resolver) Locate(ctx context.Context, ref string) (string, error) {
	l, err := r.locate(ctx, ref)
	return l.path, err
}

// LocateVerified is Locate, and with Verify, the proof that the chart verified: who signed it,
// and the digest of what was signed.
func (r *Resolver) LocateVerified(ctx context.Context, ref string) (string, *release.Provenance, error) {
	l, err := r.locate(ctx, ref)
	return l.path, l.proof, err
}

// LoadVerified is LocateVerified, and the chart it located, loaded once: as Load loads it.
func (r *Resolver) LoadVerified(ctx context.Context, ref string) (*chartv2.Chart, *release.Provenance, error) {
	l, err := r.locate(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	ch, err := chart.Loaded(l.path, l.chart)
	return ch, l.proof, err
}

// located is where a chart reference led: the chart's local path, the proof of its verification
// (nil when not verified), and the chart as it loaded there.
type located struct {
	path  string
	proof *release.Provenance
	chart helmchart.Charter
}

// Load locates ref and loads the chart it names, with its dependencies checked.
func (r *Resolver) Load(ctx context.Context, ref string) (*chartv2.Chart, error) {
	ch, _, err := r.LoadVerified(ctx, ref)
	return ch, err
}

// bounds are what a chart r loads may expand to: its Fetcher's MaxContentBytes, and its YAML
// aliases within r's yamlLimits.
func (r *Resolver) bounds() chart.Bounds {
	b := chart.Bounds{Content: chart.DefaultContentLimit, Aliases: r.yamlLimits()}
	if r.Fetcher != nil && r.Fetcher.opts.MaxContentBytes > 0 {
		b.Content = r.Fetcher.opts.MaxContentBytes
	}
	return b
}

// load loads the chart at path, which ref names, with Helm's loader, once its content is known
// to be within r's limit (contentLimit) and its YAML aliases within r's (yamlLimits).
func (r *Resolver) load(ref, path string) (helmchart.Charter, error) {
	if err := chart.Check(ref, path, r.bounds()); err != nil {
		return nil, err
	}
	return loader.Load(path)
}

func (r *Resolver) locate(ctx context.Context, ref string) (located, error) {
	version := r.Options.version()
	host := ""
	if registry.IsOCI(ref) {
		host = OCIHost(ref)
	}
	fail := func(kind Kind, err error) (located, error) {
		return located{}, &Error{Ref: ref, Repo: r.Options.RepoURL, Version: version, Kind: kind, Host: host, Err: err}
	}
	repoName := r.repositoryOf(ref)
	onDisk := IsLocal(ref, r.Options) && repoName == ""
	if onDisk {
		if _, err := os.Stat(ref); err != nil {
			return fail(KindNoChart, err)
		}
	}
	if repoName != "" {
		if err := r.checkIndexed(ref, repoName, version); err != nil {
			return located{}, err
		}
	}
	for _, u := range []string{ref, r.Options.RepoURL} {
		if err := checkScheme(r.Settings, u); err != nil {
			return fail(KindNoGetter, err)
		}
	}
	// A chart on disk is used where it is; anything else is fetched into Helm's caches. Helm's
	// downloader may leave files behind when it fails, which the guard takes back; berth's own
	// fetch says which files it put there (created).
	guard := &cacheGuard{}
	if !onDisk && !registry.IsOCI(ref) && (r.Options.RepoURL == "" || pluginScheme(r.Options.RepoURL)) {
		guard = newCacheGuard(r.Settings.RepositoryCache, r.Settings.ContentCache, helmpath.CachePath("repository"))
	}
	var created []string
	undo := func() {
		guard.undo()
		r.fetcher().chartCache(r.Settings.ContentCache).forget(created)
	}
	var path string
	var err error
	k := r.verifier()
	if k.signatures() && !registry.IsOCI(ref) {
		return fail(KindUnverified, ErrNotSigned)
	}
	if onDisk {
		inst := action.NewInstall(&action.Configuration{})
		inst.ChartPathOptions = r.Options.ChartPathOptions
		inst.Version = version
		path, err = inst.LocateChart(ref, r.Settings)
		if err == nil && k.pgp() {
			// Helm's verification of an archive on disk says nothing of who signed it.
			err = k.verify(path, path+".prov")
		}
	} else {
		path, created, err = r.download(ctx, ref, version, k)
	}
	if err != nil {
		undo()
		kind := KindOf(err)
		if host != "" {
			given := r.registryOptions()
			kind = classify(err, given.Username != "" && given.Password != "" ||
				!r.fetcher().opts.ManyTenants && hasCredentials(ctx, r.Settings, host, given))
		}
		if k, ok := fetchKind(err); ok {
			kind = k
		}
		if notServed(err, kind) {
			kind = KindNotServed
		}
		if k != nil && kind == KindUnknown {
			kind = KindUnverified
		}
		return fail(kind, err)
	}
	if r.Options.DependencyUpdate {
		if err := r.updateDependencies(ctx, path); err != nil {
			undo()
			return fail(KindOf(err), err)
		}
	}
	loaded, err := r.load(ref, path)
	if err != nil {
		undo()
		return fail(KindNotChart, err)
	}
	if k == nil || k.proof == nil {
		return located{path: path, chart: loaded}, nil
	}
	k.proof.Reference = ref
	return located{path: path, proof: k.proof, chart: loaded}, nil
}

// checkIndexed checks that REPO/CHART ref, at version, is in the index of repository name as
// cached on this machine, as Helm's downloader will look it up.
func (r *Resolver) checkIndexed(ref, name, version string) error {
	fail := func(err error) error {
		return &Error{Ref: ref, RepoName: name, Version: version, Kind: KindNotIndexed, Err: err}
	}
	idx, err := LoadIndexFile(filepath.Join(r.Settings.RepositoryCache, helmpath.CacheIndexFile(name)))
	if err != nil {
		return fail(fmt.Errorf("no cached index of repository %s: %w", name, err))
	}
	_, chartName, _ := strings.Cut(ref, "/")
	if _, err := idx.Get(chartName, version); err != nil {
		if errors.Is(err, repo.ErrNoChartName) {
			return fail(fmt.Errorf("repository %s has no chart %s in its cached index", name, chartName))
		}
		return fail(fmt.Errorf("no version of %s in the cached index of repository %s matches: %w", chartName, name, err))
	}
	return nil
}

// repositoryOf returns the name of the repository in the user's repositories.yaml that ref,
// as REPO/CHART, names, or "" when ref names none (or is on disk, or was given with a URL).
func (r *Resolver) repositoryOf(ref string) string {
	if !IsLocal(ref, r.Options) {
		return ""
	}
	if _, err := os.Stat(ref); err == nil {
		return ""
	}
	name, _, ok := strings.Cut(ref, "/")
	if !ok {
		return ""
	}
	f, err := repo.LoadFile(r.Settings.RepositoryConfig)
	if err != nil || !f.Has(name) {
		return ""
	}
	return name
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
		Username: o.Username, Password: o.Password, Data: r.Options.TLS,
	}
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
	// Data is TLS material in memory, used where the files above are not given.
	Data TLSData
}

// hasTLS reports whether opts configure TLS at all (else the system's defaults serve).
func (opts RegistryOptions) hasTLS() bool {
	return opts.CertFile != "" || opts.KeyFile != "" || opts.CAFile != "" || opts.InsecureSkipTLSVerify || !opts.Data.empty()
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
	if opts.CertFile != "" && opts.KeyFile != "" || opts.CAFile != "" || opts.InsecureSkipTLSVerify || !opts.Data.empty() {
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
	return tlsData(conf, opts)
}

// tlsData adds to conf the TLS material in memory of opts, where opts give no file of the same.
// Its errors name the key of the material (tls.crt, tls.key, ca.crt), never its content.
func tlsData(conf *tls.Config, opts RegistryOptions) (*tls.Config, error) {
	d := opts.Data
	if opts.CertFile == "" && opts.KeyFile == "" && (len(d.Cert) > 0 || len(d.Key) > 0) {
		if len(d.Cert) == 0 || len(d.Key) == 0 {
			return nil, errors.New("client certificate: tls.crt and tls.key go together: give both")
		}
		cert, err := tls.X509KeyPair(d.Cert, d.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: tls.crt and tls.key are not a certificate and its key: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	if opts.CAFile == "" && len(d.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(d.CA) {
			return nil, errors.New("ca.crt holds no PEM certificate")
		}
		conf.RootCAs = pool
	}
	return conf, nil
}
