package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"helm.sh/helm/v4/pkg/action"
	helmchart "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
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

// Pull downloads the chart ref names into opts.DestDir with Helm's pull action, and returns
// what Helm reports of the verification (with Verify). The chart is fetched and checked in a
// directory of its own first: when Pull fails, nothing is left in the destination.
func (r *Resolver) Pull(_ context.Context, ref string, opts PullOptions) (string, error) {
	version := r.Options.version()
	fail := func(kind Kind, err error) (string, error) {
		return "", &Error{Ref: ref, Repo: r.Options.RepoURL, Version: version, Kind: kind, Err: err}
	}
	switch name := r.repositoryOf(ref); {
	case name != "":
		if err := r.checkIndexed(ref, name, version); err != nil {
			return "", err
		}
	case IsLocal(ref, r.Options):
		return fail(KindNoChart, errors.New("pull takes REPO/CHART of an added repository, CHART with a repository URL, a URL or an oci:// reference"))
	}
	if fi, err := os.Stat(opts.DestDir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("destination %s: not a directory", opts.DestDir)
	}
	staging, err := os.MkdirTemp(opts.DestDir, ".pull-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(staging)

	guard := newCacheGuard(r.Settings.RepositoryCache, r.Settings.ContentCache)
	p := action.NewPull(action.WithConfig(&action.Configuration{}))
	p.ChartPathOptions = r.Options.ChartPathOptions
	p.Version = version
	p.Settings = r.Settings
	p.DestDir = staging
	p.VerifyLater = opts.Prov
	p.SetRegistryClient(r.Registry)
	out, err := p.Run(ref)
	if err != nil {
		guard.undo()
		kind := KindOf(err)
		if r.Options.Verify && kind == KindUnknown {
			kind = KindUnverified
		}
		return fail(kind, err)
	}
	archive, err := archiveIn(staging)
	if err != nil {
		return fail(KindUnknown, err)
	}
	loaded, err := loader.Load(archive)
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
			return "", err
		}
		for _, e := range entries {
			if err := os.Rename(filepath.Join(staging, e.Name()), filepath.Join(opts.DestDir, e.Name())); err != nil {
				return "", err
			}
		}
		return out, nil
	}
	return out, untar(archive, acc.Name(), staging, opts)
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
