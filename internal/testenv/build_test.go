package testenv

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStale(t *testing.T) {
	built := time.Now().Add(-time.Hour)
	older, newer := built.Add(-time.Minute), built.Add(time.Minute)

	tests := []struct {
		name  string
		files map[string]time.Time // relative to the source dir
		noBin bool
		want  bool
	}{
		{"up to date", map[string]time.Time{"main.go": older, "go.mod": older, "go.sum": older}, false, false},
		{"missing binary", map[string]time.Time{"main.go": older}, true, true},
		{"newer go file", map[string]time.Time{"main.go": older, "pkg/x.go": newer}, false, true},
		{"newer go.mod", map[string]time.Time{"main.go": older, "go.mod": newer}, false, true},
		{"newer go.sum", map[string]time.Time{"go.sum": newer}, false, true},
		{"newer embedded yaml", map[string]time.Time{"main.go": older, "manifests/stage.yaml": newer}, false, true},
		{"newer test ignored", map[string]time.Time{"main.go": older, "x_test.go": newer}, false, false},
		{"hidden dir ignored", map[string]time.Time{"main.go": older, ".cache/x": newer}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "devcluster")
			bin := filepath.Join(dir, "bin", "berth-devcluster")
			for name, mtime := range tt.files {
				touch(t, filepath.Join(src, name), mtime)
			}
			if !tt.noBin {
				touch(t, bin, built)
			}
			got, err := stale(bin, src)
			if err != nil {
				t.Fatalf("stale: %v", err)
			}
			if got != tt.want {
				t.Errorf("stale() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStaleMissingSources(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "berth-devcluster")
	touch(t, bin, time.Now())
	if _, err := stale(bin, filepath.Join(dir, "devcluster")); err == nil {
		t.Error("stale() with no source directory: got no error")
	}
}

func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := lockFile(path)
	if err != nil {
		t.Fatalf("lockFile: %v", err)
	}
	unlock()
	unlock, err = lockFile(path)
	if err != nil {
		t.Fatalf("lockFile after unlock: %v", err)
	}
	unlock()
}

func touch(t *testing.T, path string, mtime time.Time) {
	t.Helper()
	write(t, path, "x")
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}
