package source

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	helmchart "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/loader"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/registry"

	"github.com/berthdev/berth/internal/chart"
)

// DependencyOptions configure fetching a chart's dependencies: Helm's flags of `dependency
// update` and `dependency build`.
type DependencyOptions struct {
	Verify             bool
	Keyring            string
	SkipRefresh        bool
	Username, Password string
	// CredentialsHost, when set, is the only registry Username and Password go to. When empty,
	// they go to the OCI registry the chart's dependencies come from, as Helm gives them to its
	// registry client; when they come from more than one, the fetch fails with a
	// CredentialsHostsError. A repository of repositories.yaml gets the credentials it was
	// added with, never these, as in Helm.
	CredentialsHost           string
	CertFile, KeyFile, CaFile string
	InsecureSkipTLSVerify     bool
	PlainHTTP                 bool
}

// DependencyMode is what Dependencies does: Helm's `dependency update` or `dependency build`.
type DependencyMode int

const (
	// DependencyUpdate resolves the dependencies of Chart.yaml, fetches them into charts/ and
	// writes Chart.lock.
	DependencyUpdate DependencyMode = iota
	// DependencyBuild fetches into charts/ those Chart.lock names (Update without one).
	DependencyBuild
)

// CredentialsHostsError is a username and password given for the registry of a chart's
// dependencies, which come from more than one: they would reach a registry they were not
// given for, and go to none.
type CredentialsHostsError struct {
	// Hosts are the registries the dependencies come from.
	Hosts []string
}

func (e *CredentialsHostsError) Error() string {
	return fmt.Sprintf("a username and password are for one registry, and the chart's dependencies come from %d: %s",
		len(e.Hosts), strings.Join(e.Hosts, ", "))
}

// Dependencies fetches the dependencies of the chart directory dir with Helm's dependency
// manager, the user's repositories and caches, as Helm's `dependency update` (or build) does.
// Every request is bounded as a fetch of r's Fetcher is, and ends when ctx does: a server that
// does not answer in time fails it with a TimeoutError naming the host. The username and
// password of opts go to one registry only (CredentialsHost). The archives Helm writes are
// stamped with r.SourceDateEpoch.
func (r *Resolver) Dependencies(ctx context.Context, dir string, opts DependencyOptions, mode DependencyMode) error {
	epoch, err := parseSourceDateEpoch(r.SourceDateEpoch)
	if err != nil {
		return err
	}
	reg := RegistryOptions{
		CertFile: opts.CertFile, KeyFile: opts.KeyFile, CAFile: opts.CaFile,
		InsecureSkipTLSVerify: opts.InsecureSkipTLSVerify, PlainHTTP: opts.PlainHTTP,
	}
	host := opts.CredentialsHost
	if opts.Username != "" && opts.Password != "" {
		if host == "" {
			hosts := dependencyRegistries(dir)
			if len(hosts) > 1 {
				return &CredentialsHostsError{Hosts: hosts}
			}
			if len(hosts) == 1 {
				host = hosts[0]
			}
		}
		if host != "" {
			reg.Username, reg.Password = opts.Username, opts.Password
		}
	}
	ctx = withBudget(ctx)
	f := r.fetcher()
	rc, done, err := f.registryClient(ctx, r.Settings, host, reg, r.out())
	if err != nil {
		return err
	}
	defer done()
	g, err := f.getters(ctx, 0, tlsRoutes{}.withEntries(r.Settings))
	if err != nil {
		return err
	}
	defer g.close()
	m := &downloader.Manager{
		Out:              r.out(),
		ChartPath:        dir,
		Keyring:          opts.Keyring,
		SkipUpdate:       opts.SkipRefresh,
		Getters:          g.providers(r.Settings),
		RegistryClient:   rc.Client,
		RepositoryConfig: r.Settings.RepositoryConfig,
		RepositoryCache:  r.Settings.RepositoryCache,
		ContentCache:     r.Settings.ContentCache,
		Debug:            r.Settings.Debug,
		SourceDateEpoch:  epoch,
	}
	run := m.Update
	if opts.Verify {
		m.Verify = downloader.VerifyAlways
	}
	if mode == DependencyBuild {
		run = m.Build
		if opts.Verify {
			m.Verify = downloader.VerifyIfPossible
		}
	}
	return g.fail(run(), "", "")
}

// dependencyRegistries are the OCI registries (HOST[:PORT]) the dependencies of the chart
// directory dir come from, by Chart.yaml and Chart.lock, sorted; none when it does not load.
func dependencyRegistries(dir string) []string {
	if chart.Check(dir, dir, chart.LocalBounds()) != nil {
		return nil
	}
	loaded, err := loader.Load(dir)
	if err != nil {
		return nil
	}
	ch, ok := loaded.(*chartv2.Chart)
	if !ok {
		return nil
	}
	deps := ch.Metadata.Dependencies
	if ch.Lock != nil {
		deps = append(slices.Clone(deps), ch.Lock.Dependencies...)
	}
	var hosts []string
	for _, d := range deps {
		if d != nil && registry.IsOCI(d.Repository) {
			hosts = append(hosts, OCIHost(d.Repository))
		}
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}

// updateDependencies fetches the dependencies the chart directory path declares and lacks,
// and writes its Chart.lock, as Helm's install does with --dependency-update. A chart on disk
// has no host of its own: the username and password of r's Options, given for the chart
// reference, go to no dependency's registry. Its requests are bounded as every fetch of r's
// Fetcher, without a context of the caller's.
func (r *Resolver) updateDependencies(ctx context.Context, path string) error {
	loaded, err := r.load(path, path)
	if err != nil {
		return err
	}
	ch, ok := loaded.(*chartv2.Chart)
	if !ok || len(ch.Metadata.Dependencies) == 0 {
		return nil
	}
	reqs := make([]helmchart.Dependency, 0, len(ch.Metadata.Dependencies))
	for _, d := range ch.Metadata.Dependencies {
		reqs = append(reqs, d)
	}
	if action.CheckDependencies(ch, reqs) == nil {
		return nil
	}
	o := r.Options
	opts := DependencyOptions{
		Keyring:  o.Keyring,
		CertFile: o.CertFile, KeyFile: o.KeyFile, CaFile: o.CaFile,
		InsecureSkipTLSVerify: o.InsecureSkipTLSVerify, PlainHTTP: o.PlainHTTP,
	}
	return r.Dependencies(ctx, path, opts, DependencyUpdate)
}

func parseSourceDateEpoch(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	epoch, err := strconv.ParseInt(s, 10, 64)
	if err != nil || epoch < 0 {
		return nil, fmt.Errorf("invalid SOURCE_DATE_EPOCH %q: want a non-negative number of seconds", s)
	}
	t := time.Unix(epoch, 0).UTC()
	return &t, nil
}
