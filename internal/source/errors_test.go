package source

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/repo/v1"
)

func TestKindOf(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "http://127.0.0.1:1/index.yaml", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}
	tests := []struct {
		name string
		err  error
		want Kind
	}{
		{"connection refused", fmt.Errorf("looks like it cannot be reached: %w", refused), KindUnreachable},
		{"unknown authority", &url.Error{Op: "Get", URL: "https://x", Err: x509.UnknownAuthorityError{}}, KindTLS},
		{"401 from Helm's getter", errors.New("failed to fetch http://x/index.yaml : 401 Unauthorized"), KindUnauthorized},
		{"403 from Helm's getter", errors.New("failed to fetch http://x/web-1.0.0.tgz : 403 Forbidden"), KindUnauthorized},
		{"404 from Helm's getter", errors.New("failed to fetch http://x/web-1.0.0.tgz : 404 Not Found"), KindMissing},
		{"chart not in a repository", fmt.Errorf("find: %w", repo.ChartNotFoundError{Chart: "web", RepoURL: "http://x"}), KindNotInRepository},
		{"anything else", errors.New("invalid chart URL format"), KindUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := KindOf(tt.err); got != tt.want {
				t.Errorf("KindOf(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestErrorIsOneLine(t *testing.T) {
	err := &Error{Ref: "charts/web", Version: "1.0.0", Kind: KindUnreachable, Err: errors.New("first\n\tsecond")}
	if got, want := err.Error(), `chart charts/web version "1.0.0": unreachable: first second`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestCacheGuardUndo(t *testing.T) {
	base := t.TempDir()
	content := filepath.Join(base, "cache", "content")
	kept := filepath.Join(base, "cache", "repository", "kept-index.yaml")
	write := func(path string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(kept)
	g := newCacheGuard(filepath.Join(base, "cache", "repository"), content)
	write(filepath.Join(content, "ab", "abcd.chart"))
	write(filepath.Join(base, "cache", "repository", "new-index.yaml"))
	g.undo()

	var left []string
	filepath.WalkDir(base, func(path string, _ os.DirEntry, _ error) error {
		rel, _ := filepath.Rel(base, path)
		left = append(left, rel)
		return nil
	})
	if want := []string{".", "cache", "cache/repository", "cache/repository/kept-index.yaml"}; !cmp.Equal(left, want) {
		t.Errorf("left after undo (-want +got):\n%s", cmp.Diff(want, left))
	}
}
