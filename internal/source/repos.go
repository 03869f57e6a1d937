package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
	helmcli "helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/helmpath"
	"helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/atomicfile"
	"github.com/berthdev/berth/internal/par"
)

// RepositoryError is a chart repository that could not be added or updated. Kind says what
// went wrong (KindUnreachable, KindUnauthorized, KindTLS, KindMissing, KindTimeout with a
// TimeoutError in Err naming the host, KindCanceled, or KindUnknown for an index that does not
// parse); Err is Helm's error, or berth's of the fetch.
type RepositoryError struct {
	Name, URL string
	Kind      Kind
	Err       error
}

func (e *RepositoryError) Error() string {
	return fmt.Sprintf("repository %s (%s): %s: %s", e.Name, e.URL, e.Kind, oneLine(e.Err))
}

func (e *RepositoryError) Unwrap() error { return e.Err }

// ErrRepositoryExists is the answer to adding a repository under a name that has another
// configuration, without Force.
var ErrRepositoryExists = errors.New("a repository of that name exists with another configuration")

// ErrNoRepositories: repositories.yaml is missing or lists none.
var ErrNoRepositories = errors.New("no repositories configured")

// NoRepositoryError names repositories that are not in repositories.yaml.
type NoRepositoryError struct{ Names []string }

func (e *NoRepositoryError) Error() string {
	return fmt.Sprintf("no repository named %s", strings.Join(e.Names, ", "))
}

// AddOptions are Helm's options of `repo add`.
type AddOptions struct {
	// Force replaces a repository of the same name with another configuration.
	Force bool
	// Timeout bounds the download of the index; 0 is the Fetcher's RequestTimeout.
	Timeout time.Duration
	// Fetcher bounds the download (dial, TLS handshake and response header timeouts); nil is
	// one of DefaultFetchOptions.
	Fetcher *Fetcher
}

// UpdateOptions are Helm's options of `repo update`.
type UpdateOptions struct {
	// Timeout bounds the download of each index; 0 is the Fetcher's RequestTimeout.
	Timeout time.Duration
	// Fetcher bounds the downloads; nil is one of DefaultFetchOptions.
	Fetcher *Fetcher
}

// orDefault is f, or a Fetcher of DefaultFetchOptions when f is nil.
func orDefault(f *Fetcher) *Fetcher {
	if f == nil {
		return NewFetcher(DefaultFetchOptions())
	}
	return f
}

// AddResult says what AddRepository did.
type AddResult int

const (
	// Added: the repository was added or replaced.
	Added AddResult = iota
	// Unchanged: a repository of that name and the same configuration was there already.
	Unchanged
)

// AddRepository adds the chart repository e to the user's repositories.yaml, as Helm's `repo
// add` does: the index is downloaded first (an unreachable or unauthorized repository is not
// added) into the repository cache, then the entry is written under Helm's lock of
// repositories.yaml. When it fails, repositories.yaml and the cache are as they were. The
// download ends when ctx does; a server that does not answer in time fails it with a
// RepositoryError whose TimeoutError names the host.
func AddRepository(ctx context.Context, settings *helmcli.EnvSettings, e repo.Entry, opts AddOptions) (AddResult, error) {
	if strings.Contains(e.Name, "/") {
		return 0, fmt.Errorf("repository name %q contains '/'", e.Name)
	}
	// A first look without the lock spares the download when the answer is known; helm writes
	// repositories.yaml in place, so what this reads may be half-written, and is read again
	// under the lock.
	if f, err := loadRepositories(settings.RepositoryConfig); err == nil {
		if res, err := checkExisting(f, e, opts.Force); res == Unchanged || err != nil {
			return res, err
		}
	}

	// The index goes to a directory of its own first: when the repository cannot be added,
	// the cache is as it was.
	staging, err := os.MkdirTemp("", "berth-repo-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(staging)
	if err := downloadIndex(ctx, orDefault(opts.Fetcher), settings, &e, staging, opts.Timeout); err != nil {
		return 0, err
	}

	unlock, err := lockRepositories(ctx, settings.RepositoryConfig)
	if err != nil {
		return 0, err
	}
	defer unlock()
	f, err := loadRepositories(settings.RepositoryConfig)
	if err != nil {
		return 0, err
	}
	if res, err := checkExisting(f, e, opts.Force); res == Unchanged || err != nil {
		return res, err
	}
	for _, name := range []string{helmpath.CacheIndexFile(e.Name), helmpath.CacheChartsFile(e.Name)} {
		if err := moveInto(filepath.Join(staging, name), filepath.Join(settings.RepositoryCache, name)); err != nil {
			return 0, err
		}
	}
	f.Update(&e)
	return Added, writeRepositories(settings.RepositoryConfig, f)
}

// checkExisting answers Unchanged when f has e already, and ErrRepositoryExists when it has
// another repository of e's name and force is not set; Added otherwise.
func checkExisting(f *repo.File, e repo.Entry, force bool) (AddResult, error) {
	existing := f.Get(e.Name)
	switch {
	case existing == nil || force:
		return Added, nil
	case *existing == e:
		return Unchanged, nil
	default:
		return Added, fmt.Errorf("repository %s: %w", e.Name, ErrRepositoryExists)
	}
}

// downloadIndex downloads the index of e into dir, as Helm's repository cache holds it, with
// Helm's getters bounded by f and ctx (fetchGetters), each request by timeout.
func downloadIndex(ctx context.Context, f *Fetcher, settings *helmcli.EnvSettings, e *repo.Entry, dir string, timeout time.Duration) error {
	fail := func(err error) error {
		kind, ok := fetchKind(err)
		if !ok {
			kind = KindOf(err)
		}
		return &RepositoryError{Name: e.Name, URL: e.URL, Kind: kind, Err: err}
	}
	g, err := f.getters(withBudget(ctx), timeout, tlsRoutes{def: entryTLS(e)})
	if err != nil {
		return fail(err)
	}
	defer g.close()
	r, err := repo.NewChartRepository(e, g.providers(settings))
	if err != nil {
		return fail(err)
	}
	r.CachePath = dir
	if _, err := r.DownloadIndexFile(); err != nil {
		return fail(g.fail(err, hostOf(e.URL), e.URL))
	}
	return nil
}

// UpdateResult is the outcome of updating one repository's index; Err is nil on success.
type UpdateResult struct {
	Name, URL string
	Err       error
}

// UpdateRepositories downloads the index of the named repositories (all when names is empty)
// into the repository cache, in parallel as Helm's `repo update` does (at most
// repositoryUpdates at once). A repository whose index cannot be downloaded keeps its cached
// index. Unknown names fail before anything is downloaded. The downloads end when ctx does.
func UpdateRepositories(ctx context.Context, settings *helmcli.EnvSettings, names []string, opts UpdateOptions) ([]UpdateResult, error) {
	f, err := repo.LoadFile(settings.RepositoryConfig)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(f.Repositories) == 0 {
		return nil, ErrNoRepositories
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", settings.RepositoryConfig, err)
	}
	if missing := missingRepositories(f, names); len(missing) > 0 {
		return nil, &NoRepositoryError{Names: missing}
	}
	var entries []*repo.Entry
	for _, e := range f.Repositories {
		if len(names) == 0 || contains(names, e.Name) {
			entries = append(entries, e)
		}
	}
	fetcher := orDefault(opts.Fetcher)
	errs := par.Each(ctx, entries, repositoryUpdates, func(ctx context.Context, e *repo.Entry) error {
		staging, err := os.MkdirTemp("", "berth-repo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(staging)
		if err := downloadIndex(ctx, fetcher, settings, e, staging, opts.Timeout); err != nil {
			return err
		}
		for _, name := range []string{helmpath.CacheIndexFile(e.Name), helmpath.CacheChartsFile(e.Name)} {
			if err := moveInto(filepath.Join(staging, name), filepath.Join(settings.RepositoryCache, name)); err != nil {
				return err
			}
		}
		return nil
	})
	results := make([]UpdateResult, len(entries))
	for i, e := range entries {
		results[i] = UpdateResult{Name: e.Name, URL: e.URL, Err: errs[i]}
	}
	return results, nil
}

// repositoryUpdates bounds the indexes UpdateRepositories downloads at once.
const repositoryUpdates = 8

// RemoveRepositories removes the named repositories from repositories.yaml and their indexes
// from the cache. Unknown names fail before anything is removed.
func RemoveRepositories(ctx context.Context, settings *helmcli.EnvSettings, names []string) error {
	unlock, err := lockRepositories(ctx, settings.RepositoryConfig)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := repo.LoadFile(settings.RepositoryConfig)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(f.Repositories) == 0 {
		return ErrNoRepositories
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", settings.RepositoryConfig, err)
	}
	if missing := missingRepositories(f, names); len(missing) > 0 {
		return &NoRepositoryError{Names: missing}
	}
	for _, name := range names {
		f.Remove(name)
	}
	if err := writeRepositories(settings.RepositoryConfig, f); err != nil {
		return err
	}
	for _, name := range names {
		for _, file := range []string{helmpath.CacheIndexFile(name), helmpath.CacheChartsFile(name)} {
			if err := os.Remove(filepath.Join(settings.RepositoryCache, file)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove the cached index of repository %s: %w", name, err)
			}
		}
	}
	return nil
}

// Repositories returns the repositories in the user's repositories.yaml; none when it is
// missing or unreadable, as Helm's `repo list` has it.
func Repositories(settings *helmcli.EnvSettings) []*repo.Entry {
	f, _ := repo.LoadFile(settings.RepositoryConfig)
	if f == nil {
		return nil
	}
	return f.Repositories
}

func missingRepositories(f *repo.File, names []string) []string {
	var missing []string
	for _, n := range names {
		if !f.Has(n) {
			missing = append(missing, n)
		}
	}
	return missing
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// loadRepositories reads repositories.yaml; a missing file is an empty one.
func loadRepositories(path string) (*repo.File, error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var f repo.File
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &f, nil
}

// writeRepositories writes f to path at once: a reader sees the old file or the new one.
func writeRepositories(path string, f *repo.File) error {
	data, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}

// lockRepositories takes Helm's lock of the repositories file path (repositories.lock beside
// it), waiting up to 30 seconds as Helm does, and returns its release.
func lockRepositories(ctx context.Context, path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	lockPath := path + ".lock"
	if ext := filepath.Ext(path); ext != "" && len(ext) < len(path) {
		lockPath = strings.TrimSuffix(path, ext) + ".lock"
	}
	lock := flock.New(lockPath)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	locked, err := lock.TryLockContext(ctx, time.Second)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	if !locked {
		return nil, fmt.Errorf("lock %s: held by another process", lockPath)
	}
	return func() { lock.Unlock() }, nil
}

// moveInto puts the file src at dst, replacing it at once.
func moveInto(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return atomicfile.Write(dst, data, 0o644)
}
