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
	"regexp"
	"strings"
)

// archiveSuffixes are the archives Helm installs plugins from.
var archiveSuffixes = []string{".tar.gz", ".tgz"}

// maxArchiveBytes bounds a plugin archive and what it holds once extracted.
const maxArchiveBytes = 256 << 20

// isArchive reports whether name is a plugin archive.
func isArchive(name string) bool {
	for _, s := range archiveSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// versionSuffix is the -VERSION... that Helm strips from an archive's name.
var versionSuffix = regexp.MustCompile(`(.*)-\d+\..*`)

// archiveName is the plugin name Helm takes from an archive's file name: NAME-1.2.3.tgz is NAME.
func archiveName(name string) string {
	for _, s := range archiveSuffixes {
		if before, ok := strings.CutSuffix(name, s); ok {
			name = before
			break
		}
	}
	return versionSuffix.ReplaceAllString(name, `$1`)
}

// extract writes the regular files and directories of the .tgz data into dir, refusing paths
// that leave it; other entries (links, devices) are skipped.
func extract(data []byte, dir string) error {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not a gzipped tar archive: %w", err)
	}
	tr := tar.NewReader(gz)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		name := strings.ReplaceAll(h.Name, "\\", "/")
		if path.IsAbs(name) || strings.Contains(name, ":") || strings.HasPrefix(path.Clean(name), "..") {
			return fmt.Errorf("archive entry %q leaves the plugin's directory", h.Name)
		}
		dest := filepath.Join(dir, filepath.FromSlash(path.Clean(name)))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dest, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			total += h.Size
			if total > maxArchiveBytes {
				return fmt.Errorf("archive holds more than %d bytes", maxArchiveBytes)
			}
			if err := writeFile(dest, tr, h.FileInfo().Mode().Perm()); err != nil {
				return err
			}
		}
	}
}

func writeFile(dest string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pluginRoot is dir when it holds plugin.yaml, else its first subdirectory that does, as Helm
// finds the plugin in an extracted archive.
func pluginRoot(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
		return dir, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), FileName)); err == nil {
				return filepath.Join(dir, e.Name()), nil
			}
		}
	}
	return "", fmt.Errorf("the archive's top directory or its subdirectories: %w", ErrNoMetadata)
}
