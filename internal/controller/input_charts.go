package controller

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	helmcli "helm.sh/helm/v4/pkg/cli"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/internal/yamlbound"
)

// Charts fetches charts with Helm's SDK into a cache of the controller's own, never reading or
// writing the Helm files of the user the controller runs as.
type Charts struct {
	settings *helmcli.EnvSettings
	// fetcher carries every fetch's requests to chart repositories and OCI registries: one pool
	// of connections for the controller's life, where a client a fetch would leave connections
	// open behind it at every reconcile; every request bounded in time and size; repository
	// indexes and charts kept, so that a reconcile of what did not change downloads nothing.
	fetcher *source.Fetcher
	// fetches runs fetches off the controller's workers.
	fetches *fetches
}

// chartCacheBytes bounds the charts the controller keeps on disk.
const chartCacheBytes = 512 << 20

// ChartsOptions bound the controller's chart fetches.
type ChartsOptions struct {
	// MaxIndexBytes is the largest repository index taken; 0 means
	// source.ManyTenantsMaxIndexBytes.
	MaxIndexBytes int64
	// FetchesPerNamespace is how many fetches one namespace's Releases may have under way at
	// once; 0 means DefaultFetchesPerNamespace.
	FetchesPerNamespace int
	// MinFetchRate is the fewest bytes a second a repository's or registry's answer may come
	// at, measured over source.DefaultRateWindow; slower, the fetch ends with a
	// source.SlowTransferError. 0 allows any rate.
	MinFetchRate int64
}

// DefaultMinFetchRate is the controller's minimum rate of a fetch's answers unless told
// otherwise: a chart of the largest size taken comes within hours at it, while a server that
// sends a byte every few seconds is ended after source.DefaultRateWindow.
const DefaultMinFetchRate = 1 << 10

// NewCharts returns a chart fetcher whose Helm repository index, chart and registry caches are
// under dir, with the bounds of o.
func NewCharts(dir string, o ChartsOptions) (*Charts, error) {
	fo := source.DefaultFetchOptions()
	fo.ChartCacheBytes = chartCacheBytes
	fo.MaxIndexBytes, fo.IndexCacheBytes = source.ManyTenantsMaxIndexBytes, source.ManyTenantsIndexCacheBytes
	if o.MaxIndexBytes > 0 {
		fo.MaxIndexBytes = o.MaxIndexBytes
	}
	fo.MinRate = o.MinFetchRate
	// A tenant's Release reaches a registry with its own credentials or none, never the
	// controller's, and gets no chart from the cache that its own credentials did not fetch.
	fo.ManyTenants = true
	fo.MaxContentBytes = MaxChartContentBytes
	c := newCharts(dir, fo)
	c.fetches = newFetches(o.FetchesPerNamespace)
	return c, nil
}

// newCharts returns a chart fetcher of dir, whose fetches have the bounds of o.
func newCharts(dir string, o source.FetchOptions) *Charts {
	s := helmcli.New()
	s.RepositoryConfig = filepath.Join(dir, "repositories.yaml")
	s.RepositoryCache = filepath.Join(dir, "repository")
	s.ContentCache = filepath.Join(dir, "content")
	s.RegistryConfig = filepath.Join(dir, "registry", "config.json")
	s.PluginsDirectory = filepath.Join(dir, "plugins")
	s.Debug = false
	return &Charts{settings: s, fetcher: source.NewFetcher(o), fetches: newFetches(0)}
}

// fetched is a chart and the digest of its package, and the proof of its verification when
// the Release asked for one (spec.chart.verify).
type fetched struct {
	chart  *chartv2.Chart
	digest string
	proof  *release.Provenance
}

// chartProof is what a Release's status says of proof p: nil when the chart was not verified.
func chartProof(p *release.Provenance) *v1alpha1.ChartProof {
	if p == nil {
		return nil
	}
	return &v1alpha1.ChartProof{Provider: p.Provider, Digest: p.Digest, Signer: p.Signer, Issuer: p.Issuer, LogIndex: p.LogIndex}
}

// located is a chart's package on disk, and the proof of its verification when it was verified.
type located struct {
	path  string
	proof *release.Provenance
}

// locate downloads (or finds in the cache) the chart ref names, with the credentials and TLS
// material of a, within ctx, and returns its package and, verified, the proof of it: a source
// that does not answer before ctx's deadline fails the fetch with a source.TimeoutError that
// names it.
func (c *Charts) locate(ctx context.Context, ref chartRef, a chartAccess) (located, error) {
	opts := source.Options{TLS: a.TLS}
	opts.RepoURL, opts.Version = ref.RepoURL, ref.Version
	opts.Username, opts.Password = a.Username, a.Password
	opts.PlainHTTP, opts.PassCredentialsAll = ref.PlainHTTP, ref.PassCredentials
	if ref.Verify != "" {
		opts.Verify, opts.KeyringData = true, a.Keyring
	}
	opts.Cosign, opts.Notation = a.Cosign, a.Notation
	r := &source.Resolver{Settings: c.settings, Options: opts, Out: io.Discard, Fetcher: c.fetcher}
	path, proof, err := r.LocateVerified(ctx, ref.Ref)
	return located{path: path, proof: proof}, err
}

// MaxChartContentBytes bounds a chart's content once decompressed, checked as it streams
// before the chart is loaded: a loaded chart is held whole in memory, and each of the
// controller's workers may hold one. (Helm's loader allows 100 MiB.)
const MaxChartContentBytes = 50 << 20

// tenantChartBounds are what a tenant's chart may expand to before it loads, in one pass over
// its archives: MaxChartContentBytes, and its YAML files' aliases within yamlbound.Tenant.
func tenantChartBounds() chart.Bounds {
	return chart.Bounds{Content: MaxChartContentBytes, Aliases: yamlbound.Tenant}
}

// load loads the packaged chart at path, with its digest, once its content is known to be
// within MaxChartContentBytes; name names it in errors (path when "").
func load(path, name string) (*fetched, error) {
	digest, err := fileDigest(path)
	if err != nil {
		return nil, err
	}
	ch, err := chart.LoadWithin(path, cmp.Or(name, path), tenantChartBounds())
	if errors.As(err, new(*chart.AliasError)) {
		return nil, &InvalidChartError{Err: err}
	}
	if err != nil {
		return nil, err
	}
	return &fetched{chart: ch, digest: digest}, nil
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("digest of %s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
