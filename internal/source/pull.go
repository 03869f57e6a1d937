package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	helmchart "helm.sh/helm/v4/pkg/chart"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/registry"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/release"
)

// PullOptions say where Pull puts a chart: Helm's --destination, --untar, --untardir and
// --prov.
type PullOptions struct {
	// DestDir is the directory the archive (or, with Untar, UntarDir) goes to.
	DestDir string
	// Untar unpacks the chart into UntarDir (relative to DestDir unless absolute) instead of
	// keeping the archive.
	Untar    bool
	UntarDir string
	// Prov fetches the provenance file beside the archive without verifying it.
	Prov bool
}

// Pull downloads the chart ref names into opts.DestDir with Helm's downloader, as Helm's pull
// does, and returns what Helm reports of the verification (with Verify). The chart is fetched
// and checked in a directory of its own first: when Pull fails, nothing is left in the
// destination. Every request is bounded as a fetch of r's Fetcher is, and ends when ctx does:
// a server that does not answer in time fails it with a TimeoutError naming the host. The
// username and password of r's Options go to the host of ref (of the repository Options.RepoURL
// names, with one), and to a chart's host other than the repository's only with
// PassCredentialsAll.
func (r *Resolver) Pull(ctx context.Context, ref string, opts PullOptions) (string, error) {
	out, _, err := r.PullVerified(ctx, ref, opts)
	return out, err
}

// PullVerified is Pull, and with Verify, Cosign or Notation, the proof that the chart verified.
// With Cosign or Notation, the chart is the one Locate fetched and verified (Helm's downloader
// would not check its signatures), copied into opts.DestDir under Helm's name for it, and
// nothing is reported.
func (r *Resolver) PullVerified(ctx context.Context, ref string, opts PullOptions) (string, *release.Provenance, error) {
	version := r.Options.version()
	host := ""
	if registry.IsOCI(ref) {
		host = OCIHost(ref)
	}
	fail := func(kind Kind, err error) (string, *release.Provenance, error) {
		return "", nil, &Error{Ref: ref, Repo: r.Options.RepoURL, Version: version, Kind: kind, Host: host, Err: err}
	}
	switch name := r.repositoryOf(ref); {
	case name != "":
		if err := r.checkIndexed(ref, name, version); err != nil {
			return "", nil, err
		}
	case IsLocal(ref, r.Options):
		return fail(KindNoChart, errors.New("pull takes REPO/CHART of an added repository, CHART with a repository URL, a URL or an oci:// reference"))
	}
	for _, u := range []string{ref, r.Options.RepoURL} {
		if err := checkScheme(r.Settings, u); err != nil {
			return fail(KindNoGetter, err)
		}
	}
	signatures := r.Options.Cosign != nil || r.Options.Notation != nil
	if signatures && !registry.IsOCI(ref) {
		return fail(KindUnverified, ErrNotSigned)
	}
	if fi, err := os.Stat(opts.DestDir); err != nil || !fi.IsDir() {
		return "", nil, fmt.Errorf("destination %s: not a directory", opts.DestDir)
	}
	staging, err := os.MkdirTemp(opts.DestDir, ".pull-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(staging)

	var out string
	var proof *release.Provenance
	guard := newCacheGuard(r.Settings.RepositoryCache, r.Settings.ContentCache)
	if signatures {
		l, err := r.locate(ctx, ref)
		if err != nil {
			return "", nil, err
		}
		proof = l.proof
		err = copyNamed(l.path, staging)
	} else {
		out, err = r.pullTo(withBudget(ctx), ref, version, staging, opts.Prov)
	}
	if err != nil {
		guard.undo()
		kind, ok := fetchKind(err)
		if !ok {
			kind = KindOf(err)
		}
		if host != "" && !ok {
			given := r.registryOptions()
			kind = classify(err, given.Username != "" && given.Password != "" || hasCredentials(ctx, r.Settings, host, given))
		}
		if r.Options.Verify && kind == KindUnknown {
			kind = KindUnverified
		}
		return fail(kind, err)
	}
	archive, err := archiveIn(staging)
	if err != nil {
		return fail(KindUnknown, err)
	}
	loaded, err := r.load(ref, archive)
	if err != nil {
		return fail(KindNotChart, err)
	}
	acc, err := helmchart.NewDefaultAccessor(loaded)
	if err != nil {
		return fail(KindNotChart, err)
	}
	if !opts.Untar {
		entries, err := os.ReadDir(staging)
		if err != nil {
			return "", nil, err
		}
		for _, e := range entries {
			if err := os.Rename(filepath.Join(staging, e.Name()), filepath.Join(opts.DestDir, e.Name())); err != nil {
				return "", nil, err
			}
		}
		return out, proof, nil
	}
	return out, proof, untar(archive, acc.Name(), staging, opts)
}

// pullTo downloads the chart ref names at version into dest as Helm's pull action does (the
// same downloader, index lookup, verification and TLS settings), with getters and a registry
// client bound to ctx and the fetcher's bounds, and returns what Helm reports. With prov, the
// provenance file is fetched beside the archive, not verified.
func (r *Resolver) pullTo(ctx context.Context, ref, version, dest string, prov bool) (string, error) {
	o := r.Options
	f := r.fetcher()
	var out strings.Builder
	def := RegistryOptions{CertFile: o.CertFile, KeyFile: o.KeyFile, CAFile: o.CaFile, InsecureSkipTLSVerify: o.InsecureSkipTLSVerify, Data: o.TLS}
	g, err := f.getters(ctx, 0, tlsRoutes{def: def}.withEntries(r.Settings))
	if err != nil {
		return "", err
	}
	defer g.close()
	c := downloader.ChartDownloader{
		Out:     &out,
		Keyring: o.Keyring,
		Verify:  downloader.VerifyNever,
		Getters: g.providers(r.Settings),
		Options: []getter.Option{
			getter.WithBasicAuth(o.Username, o.Password),
			getter.WithPassCredentialsAll(o.PassCredentialsAll),
			getter.WithTLSClientConfig(o.CertFile, o.KeyFile, o.CaFile),
			getter.WithInsecureSkipVerifyTLS(o.InsecureSkipTLSVerify),
			getter.WithPlainHTTP(o.PlainHTTP),
		},
		RepositoryConfig: r.Settings.RepositoryConfig,
		RepositoryCache:  r.Settings.RepositoryCache,
		ContentCache:     r.Settings.ContentCache,
	}
	host, u := r.hostOf(ref), ref
	if registry.IsOCI(ref) {
		rc, done, err := f.registryClient(ctx, r.Settings, OCIHost(ref), r.registryOptions(), r.out())
		if err != nil {
			return "", err
		}
		defer done()
		c.RegistryClient = rc.Client
		c.Options = append(c.Options, getter.WithRegistryClient(rc.Client))
	}
	switch {
	case o.Verify:
		c.Verify = downloader.VerifyAlways
	case prov:
		c.Verify = downloader.VerifyLater
	}
	if o.RepoURL != "" {
		host, u = hostOf(o.RepoURL), o.RepoURL
		chartURL, err := repo.FindChartInRepoURL(o.RepoURL, ref, c.Getters,
			repo.WithChartVersion(version),
			repo.WithClientTLS(o.CertFile, o.KeyFile, o.CaFile),
			repo.WithUsernamePassword(o.Username, o.Password),
			repo.WithInsecureSkipTLSVerify(o.InsecureSkipTLSVerify),
			repo.WithPassCredentialsAll(o.PassCredentialsAll))
		if err != nil {
			return out.String(), g.fail(err, host, u)
		}
		// The downloader gives the credentials to the host of the URL it fetches: a chart of
		// the repository on another host gets them only with PassCredentialsAll.
		if !o.PassCredentialsAll && !sameServer(chartURL, o.RepoURL) {
			c.Options[0] = getter.WithBasicAuth("", "")
		}
		ref = chartURL
	}
	_, v, err := c.DownloadTo(ref, version, dest)
	if err != nil {
		return out.String(), g.fail(err, host, u)
	}
	if o.Verify {
		for name := range v.SignedBy.Identities {
			fmt.Fprintf(&out, "Signed by: %v\n", name)
		}
		fmt.Fprintf(&out, "Using Key With Fingerprint: %X\n", v.SignedBy.PrimaryKey.Fingerprint)
		fmt.Fprintf(&out, "Chart Hash Verified: %s\n", v.FileHash)
	}
	return out.String(), nil
}

// untar unpacks archive, the chart name, into opts.UntarDir: first beside the archive, then
// moved into place at once. An existing directory of that name is not overwritten.
func untar(archive, name, staging string, opts PullOptions) error {
	ud := opts.UntarDir
	if !filepath.IsAbs(ud) {
		ud = filepath.Join(opts.DestDir, ud)
	}
	target := filepath.Join(ud, name)
	if _, err := os.Stat(target); err == nil {
		return fmt.Errorf("failed to untar: a file or directory with the name %s already exists", target)
	}
	expanded := filepath.Join(staging, "expanded")
	if err := chartutil.ExpandFile(expanded, archive); err != nil {
		return fmt.Errorf("failed to untar: %w", err)
	}
	if err := os.MkdirAll(ud, 0o755); err != nil {
		return fmt.Errorf("failed to untar (mkdir): %w", err)
	}
	if err := os.Rename(filepath.Join(expanded, name), target); err != nil {
		// Another file system: unpack in place, as Helm does.
		return chartutil.ExpandFile(ud, archive)
	}
	return nil
}

// archiveIn returns the chart archive Helm's pull wrote into dir.
func archiveIn(dir string) (string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if err != nil {
		return "", err
	}
	if len(matches) != 1 {
		return "", errors.New("the download left no chart archive")
	}
	return matches[0], nil
}

// copyNamed copies the chart archive at path into dir under the name Helm gives it:
// NAME-VERSION.tgz.
func copyNamed(path, dir string) error {
	ch, err := chart.Load(path)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ch.Metadata.Name+"-"+ch.Metadata.Version+".tgz"), data, 0o644)
}
