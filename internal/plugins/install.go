package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"helm.sh/helm/v4/pkg/provenance"
)

// SourceKind is where a plugin is installed from.
type SourceKind int

// The kinds of source, told apart as Helm does.
const (
	// SourceDir is a directory on disk, linked into the plugins directory (development mode).
	SourceDir SourceKind = iota
	// SourceArchive is a .tgz or .tar.gz on disk.
	SourceArchive
	// SourceURL is an http(s) URL of a .tgz or .tar.gz.
	SourceURL
	// SourceVCS is a git repository, cloned.
	SourceVCS
	// SourceOCI is an oci:// reference.
	SourceOCI
	// SourceNone is neither a file nor a URL.
	SourceNone
)

// scpLike is a git repository named as scp names a remote path: USER@HOST:PATH.
var scpLike = regexp.MustCompile(`^[A-Za-z0-9_]+@[A-Za-z0-9._-]+:`)

// KindOf is the kind of the plugin source src.
func KindOf(src string) SourceKind {
	switch {
	case strings.HasPrefix(src, "oci://"):
		return SourceOCI
	case exists(src) && isArchive(src):
		return SourceArchive
	case exists(src):
		return SourceDir
	case (strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://")) && isArchive(src):
		return SourceURL
	case strings.Contains(src, "://") || scpLike.MatchString(src):
		return SourceVCS
	default:
		return SourceNone
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ErrOCIUnsupported is an oci:// reference given to Install, which takes no registry
// settings: InstallOCI installs those.
var ErrOCIUnsupported = errors.New("plugins.Install does not pull from OCI registries: use plugins.InstallOCI")

// ErrNoSuchSource is a source that is no file, directory or URL.
var ErrNoSuchSource = errors.New("no such plugin directory or archive, and not a URL")

// ErrNotVerifiable is --verify asked of a source that has no signature to check.
var ErrNotVerifiable = errors.New("plugin source does not support verification")

// InstallOptions say where a plugin comes from and goes.
type InstallOptions struct {
	// Source is a directory, an archive, an archive's URL or a git repository's URL.
	Source string
	// Version is a git tag, branch, commit or semver constraint of tags (SourceVCS only).
	Version string
	// Dir is the plugins directory the plugin is installed into.
	Dir string
	// Verify checks an archive against its provenance file (SOURCE.prov) and Keyring.
	Verify  bool
	Keyring string
	// Client fetches archives' URLs; its timeout and the context bound the download.
	Client *http.Client
	// Hooks receives what the plugin's install hook writes.
	Hooks io.Writer
}

// Installed is a plugin that was installed, and its signature when it was verified.
type Installed struct {
	Plugin *Plugin
	Kind   SourceKind
	// Verification is the signature checked with Verify.
	Verification *provenance.Verification
}

// Install installs the plugin of opts.Source into opts.Dir, then runs its install hook. Until
// the hook, a failure leaves opts.Dir as it was. Git runs under ctx, and so do downloads.
func Install(ctx context.Context, opts InstallOptions) (*Installed, error) {
	kind := KindOf(opts.Source)
	if kind == SourceNone {
		return nil, ErrNoSuchSource
	}
	if opts.Verify && kind != SourceArchive && kind != SourceURL {
		return nil, ErrNotVerifiable
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	var p *Plugin
	var v *provenance.Verification
	var err error
	switch kind {
	case SourceOCI:
		return nil, ErrOCIUnsupported
	case SourceDir:
		p, err = linkDir(opts)
	case SourceArchive, SourceURL:
		p, v, err = installArchive(ctx, opts, kind)
	default:
		p, err = cloneRepo(ctx, opts)
	}
	if err != nil {
		return nil, err
	}
	if err := p.RunHook(ctx, HookInstall, opts.Hooks); err != nil {
		return nil, err
	}
	return &Installed{Plugin: p, Kind: kind, Verification: v}, nil
}

// destination is where the plugin called name goes in dir, unless it is taken.
func destination(dir, name string) (string, error) {
	dest := filepath.Join(dir, name)
	if _, err := os.Lstat(dest); err == nil {
		return "", &ExistsError{Name: name, Path: dest}
	}
	return dest, nil
}

// linkDir links the plugin directory opts.Source into opts.Dir under its own name, as Helm
// does with a local directory.
func linkDir(opts InstallOptions) (*Plugin, error) {
	src, err := filepath.Abs(opts.Source)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: expected plugin to be a directory (containing a file 'plugin.yaml')", src)
	}
	p, err := loadStaged(src)
	if err != nil {
		return nil, err
	}
	dest, err := destination(opts.Dir, filepath.Base(src))
	if err != nil {
		return nil, err
	}
	if err := os.Symlink(src, dest); err != nil {
		return nil, err
	}
	p.Dir = dest
	return p, nil
}

// stage loads the plugin at root, a directory in a staging directory of opts.Dir, and moves it
// to its place in opts.Dir under name.
func stage(root, dir, name string) (*Plugin, error) {
	p, err := loadStaged(root)
	if err != nil {
		return nil, err
	}
	dest, err := destination(dir, name)
	if err != nil {
		return nil, err
	}
	if err := os.Rename(root, dest); err != nil {
		return nil, err
	}
	p.Dir = dest
	return p, nil
}

// loadStaged loads the plugin about to be installed from dir, whose path its errors do not
// name: the source does.
func loadStaged(dir string) (*Plugin, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoMetadata
	}
	if err != nil {
		return nil, err
	}
	m, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("plugin.yaml: %w", err)
	}
	return &Plugin{Dir: dir, Metadata: m}, nil
}
