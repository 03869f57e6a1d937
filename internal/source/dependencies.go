package source

import (
	"fmt"
	"strconv"
	"time"

	"helm.sh/helm/v4/pkg/action"
	helmchart "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/loader"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/getter"
)

// DependencyOptions configure fetching a chart's dependencies: Helm's flags of `dependency
// update` and `dependency build`.
type DependencyOptions struct {
	Verify                    bool
	Keyring                   string
	SkipRefresh               bool
	Username, Password        string
	CertFile, KeyFile, CaFile string
	InsecureSkipTLSVerify     bool
	PlainHTTP                 bool
}

// DependencyManager returns Helm's dependency manager of the chart directory dir, with the
// user's repositories and caches. sourceDateEpoch is SOURCE_DATE_EPOCH ("" when unset), the
// time Helm stamps on the archives it writes.
func (r *Resolver) DependencyManager(dir string, opts DependencyOptions, sourceDateEpoch string) (*downloader.Manager, error) {
	epoch, err := parseSourceDateEpoch(sourceDateEpoch)
	if err != nil {
		return nil, err
	}
	rc := r.Registry
	if opts.Username != "" || opts.CertFile != "" || opts.CaFile != "" || opts.InsecureSkipTLSVerify || opts.PlainHTTP {
		rc, err = NewRegistryClient(r.Settings, RegistryOptions{
			CertFile: opts.CertFile, KeyFile: opts.KeyFile, CAFile: opts.CaFile,
			InsecureSkipTLSVerify: opts.InsecureSkipTLSVerify, PlainHTTP: opts.PlainHTTP,
			Username: opts.Username, Password: opts.Password,
		}, r.Out)
		if err != nil {
			return nil, err
		}
	}
	m := &downloader.Manager{
		Out:              r.Out,
		ChartPath:        dir,
		Keyring:          opts.Keyring,
		SkipUpdate:       opts.SkipRefresh,
		Getters:          getter.All(r.Settings),
		RegistryClient:   rc,
		RepositoryConfig: r.Settings.RepositoryConfig,
		RepositoryCache:  r.Settings.RepositoryCache,
		ContentCache:     r.Settings.ContentCache,
		Debug:            r.Settings.Debug,
		SourceDateEpoch:  epoch,
	}
	if opts.Verify {
		m.Verify = downloader.VerifyAlways
	}
	return m, nil
}

// updateDependencies fetches the dependencies the chart at path declares and lacks, and
// writes its Chart.lock, as Helm's install does with --dependency-update.
func (r *Resolver) updateDependencies(path string) error {
	loaded, err := loader.Load(path)
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
	m, err := r.DependencyManager(path, DependencyOptions{Keyring: r.Options.Keyring}, r.SourceDateEpoch)
	if err != nil {
		return err
	}
	return m.Update()
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
