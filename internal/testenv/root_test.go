package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("RepoRoot: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testenv")); err != nil {
		t.Errorf("RepoRoot() = %s, which does not hold internal/testenv: %v", root, err)
	}
}

func TestFindModuleRoot(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "go.mod"), "// comment\nmodule example.com/root // trailing\n\ngo 1.26.0\n")
	write(t, filepath.Join(root, "sub", "go.mod"), "module example.com/root/sub\n")
	write(t, filepath.Join(root, "quoted", "go.mod"), "module \"example.com/quoted\"\n")
	deep := filepath.Join(root, "sub", "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, dir, module, want string
		wantErr                 bool
	}{
		{"found in dir", root, "example.com/root", root, false},
		{"skips other modules", deep, "example.com/root", root, false},
		{"nearest", deep, "example.com/root/sub", filepath.Join(root, "sub"), false},
		{"quoted", filepath.Join(root, "quoted"), "example.com/quoted", filepath.Join(root, "quoted"), false},
		{"missing", deep, "example.com/missing", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := findModuleRoot(tt.dir, tt.module)
			if (err != nil) != tt.wantErr {
				t.Fatalf("findModuleRoot(%s, %s) error = %v, want error %v", tt.dir, tt.module, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("findModuleRoot(%s, %s) = %q, want %q", tt.dir, tt.module, got, tt.want)
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
