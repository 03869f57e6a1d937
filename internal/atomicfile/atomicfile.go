// Package atomicfile writes files whole or not at all: a reader of the path sees the old
// content or the new, never part of it, and a failed write leaves the path as it was.
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to a temporary file beside path (making path's directory when missing),
// with permissions perm, and renames it to path.
func Write(path string, data []byte, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
