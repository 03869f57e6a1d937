package testenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// buildTimeout bounds a build of the devcluster binary; a build from a cold
// module and build cache takes many minutes.
const buildTimeout = 45 * time.Minute

// EnsureDevcluster returns the path of bin/berth-devcluster, building it first
// when it is missing or older than any source file under devcluster/.
// An exclusive lock on bin/.berth-devcluster.lock makes test packages that run
// in parallel build it once.
func EnsureDevcluster() (binaryPath string, err error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	src := filepath.Join(root, "devcluster")
	bin := filepath.Join(root, "bin", "berth-devcluster")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", fmt.Errorf("ensure devcluster: %w", err)
	}

	unlock, err := lockFile(filepath.Join(filepath.Dir(bin), ".berth-devcluster.lock"))
	if err != nil {
		return "", fmt.Errorf("ensure devcluster: %w", err)
	}
	defer unlock()

	isStale, err := stale(bin, src)
	if err != nil {
		return "", fmt.Errorf("ensure devcluster: %w", err)
	}
	if isStale {
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		if err := build(ctx, src, bin); err != nil {
			return "", fmt.Errorf("ensure devcluster: %w", err)
		}
	}
	return bin, nil
}

// lockFile takes an exclusive flock on path, waiting for other holders.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// stale reports whether the binary at bin is missing or older than a file
// under src that goes into it (tests of src do not).
func stale(bin, src string) (bool, error) {
	info, err := os.Stat(bin)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("check %s: %w", bin, err)
	}
	built := info.ModTime()
	newer := errors.New("newer source")
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != src && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), "_test.go") || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.ModTime().After(built) {
			return newer
		}
		return nil
	})
	if errors.Is(err, newer) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("check sources in %s: %w", src, err)
	}
	return false, nil
}

// build compiles the module in src to bin. It writes to a temporary file and
// renames it, so running copies of the old binary are unaffected, then marks
// the result as newer than every source (go build leaves an up-to-date
// binary untouched).
func build(ctx context.Context, src, bin string) error {
	tmp := bin + ".tmp"
	cmd := exec.CommandContext(ctx, "bash", "build.sh", tmp)
	cmd.Dir = src
	out, err := cmd.CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("build %s in %s: %w\n%s", filepath.Base(bin), src, err, out)
	}
	now := time.Now()
	if err := os.Chtimes(tmp, now, now); err != nil {
		return fmt.Errorf("build %s: %w", filepath.Base(bin), err)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return fmt.Errorf("build %s: %w", filepath.Base(bin), err)
	}
	return nil
}
