package plugins

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"helm.sh/helm/v4/pkg/provenance"
)

// ErrVerifyDirectory is a plugin directory given to VerifyArchive: only archives are signed.
var ErrVerifyDirectory = errors.New("directory verification not supported - only plugin tarballs can be verified")

// ErrNotTarball is a file given to VerifyArchive whose name is no gzipped tarball's.
var ErrNotTarball = errors.New("plugin file must be a gzipped tarball (.tar.gz or .tgz)")

// NoProvenanceError is a plugin archive without its provenance file beside it.
type NoProvenanceError struct {
	Path string
	Err  error
}

func (e *NoProvenanceError) Error() string {
	return fmt.Sprintf("could not find provenance file %s: %v", e.Path, e.Err)
}

func (e *NoProvenanceError) Unwrap() error { return e.Err }

// VerifyArchive checks the plugin archive at p against its provenance file (p.prov) and the
// public keys in keyring, as Helm's plugin verify does: the signature must be by one of them
// and the provenance file must hold the archive's digest under its file name.
func VerifyArchive(p, keyring string) (*provenance.Verification, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, ErrVerifyDirectory
	}
	if ext := filepath.Ext(p); ext != ".gz" && ext != ".tgz" {
		return nil, ErrNotTarball
	}
	if _, err := os.Stat(p + ".prov"); err != nil {
		return nil, &NoProvenanceError{Path: p + ".prov", Err: err}
	}
	data, err := readFile(p)
	if err != nil {
		return nil, fmt.Errorf("failed to read plugin file: %w", err)
	}
	prov, err := readFile(p + ".prov")
	if err != nil {
		return nil, fmt.Errorf("failed to read provenance file: %w", err)
	}
	return verify(data, prov, filepath.Base(p), keyring)
}

// archiveMetadata reads the first plugin.yaml in the .tgz data, as Helm finds the metadata of
// a plugin archive it verifies.
func archiveMetadata(data []byte) (Metadata, error) {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return Metadata{}, fmt.Errorf("not a gzipped tar archive: %w", err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return Metadata{}, fmt.Errorf("the archive: %w", ErrNoMetadata)
		}
		if err != nil {
			return Metadata{}, fmt.Errorf("read archive: %w", err)
		}
		if path.Base(h.Name) != FileName || h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, 1<<20))
		if err != nil {
			return Metadata{}, fmt.Errorf("read archive: %w", err)
		}
		m, err := parse(b)
		if err != nil {
			return Metadata{}, fmt.Errorf("%s: %w", h.Name, err)
		}
		return m, nil
	}
}
