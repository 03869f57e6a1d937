package chartpkg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/berthdev/berth/internal/atomicfile"
)

// Options configure Package: Helm's flags of helm package.
type Options struct {
	// Version and AppVersion, when set, replace those of Chart.yaml.
	Version, AppVersion string
	// Destination is the directory the archive is written to ("." is the working directory);
	// it is made when missing.
	Destination string
	// SourceDateEpoch, when set, is the time of every file in the archive.
	SourceDateEpoch *time.Time
	// Signing, when set, signs the archive: a provenance file is written beside it.
	Signing *Signing
}

// Package packages the chart directory dir into an archive in opts.Destination, as helm package
// does, and returns the archive's path. Unlike Helm, the archive holds each Chart.yaml as it was
// written, with only version and appVersion changed when opts says so: a field Helm's metadata
// does not know (a dependency's depends-on) is kept. The archive (and its provenance file) are
// made aside and moved into the destination only when complete: a chart that does not package
// or a key that does not sign writes nothing there.
func Package(dir string, opts Options) (string, error) {
	if err := CheckDir(dir); err != nil {
		return "", err
	}
	var signer *signer
	if opts.Signing != nil {
		var err error
		if signer, err = opts.Signing.load(); err != nil {
			return "", err
		}
	}
	tmp, err := os.MkdirTemp("", "berth-package-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	staged, err := stage(dir, tmp, opts)
	if err != nil {
		return "", err
	}
	if signer != nil {
		if err := signer.sign(staged); err != nil {
			return "", err
		}
	}
	dest := opts.Destination
	if dest == "." || dest == "" {
		if dest, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	return place(staged, dest, signer != nil)
}

// CheckDir fails with an *Error unless dir is a directory with a Chart.yaml.
func CheckDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &Error{Kind: KindNoPath, Path: dir, Err: err}
	case err != nil:
		return err
	case !fi.IsDir():
		return &Error{Kind: KindNotChart, Path: dir}
	}
	if _, err := os.Stat(filepath.Join(dir, chartutil.ChartfileName)); errors.Is(err, fs.ErrNotExist) {
		return &Error{Kind: KindNotChart, Path: dir, Err: err}
	}
	return nil
}

// stage packages dir with Helm's package action into tmp, and writes the archive berth keeps,
// with the Chart.yaml files as written, into tmp/out. It returns that archive's path.
func stage(dir, tmp string, opts Options) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	p := action.NewPackage()
	p.Version, p.AppVersion, p.SourceDateEpoch, p.Destination = opts.Version, opts.AppVersion, opts.SourceDateEpoch, tmp
	built, err := p.Run(abs, nil)
	if err != nil {
		return "", err
	}
	ch, err := loader.LoadDir(abs)
	if err != nil {
		return "", err
	}
	files := chartFiles(ch)
	root := path.Join(ch.Name(), chartutil.ChartfileName)
	if files[root], err = setChartFields(files[root], opts.Version, opts.AppVersion); err != nil {
		return "", err
	}
	out := filepath.Join(tmp, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		return "", err
	}
	staged := filepath.Join(out, filepath.Base(built))
	if err := rewriteArchive(built, staged, files); err != nil {
		return "", fmt.Errorf("write %s: %w", filepath.Base(built), err)
	}
	return staged, nil
}

// place moves the staged archive, and its provenance file when prov, into dest and returns the
// archive's path there. Each file appears whole or not at all.
func place(staged, dest string, prov bool) (string, error) {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return "", err
	}
	target := filepath.Join(dest, filepath.Base(staged))
	if err := copyFile(staged, target); err != nil {
		return "", err
	}
	if prov {
		if err := copyFile(staged+".prov", target+".prov"); err != nil {
			return "", err
		}
	}
	return target, nil
}

// copyFile copies src to dst whole or not at all.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return atomicfile.Write(dst, data, 0o644)
}
