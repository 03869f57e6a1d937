package chartcmds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/test/berthtest"
)

// TestBadInputWritesNothing: a missing path, a directory that is not a chart, an unknown
// starter and a missing signing key fail with an error naming them, and write nothing.
func TestBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	key := berthtest.NewSigningKey(t, "signer")
	work := t.TempDir()
	chartDir := configMapChart(t, "shop")
	notChart := filepath.Join(work, "empty")
	if err := os.Mkdir(notChart, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(work, "missing")
	dest := filepath.Join(work, "out")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"package a missing path", []string{"package", missing, "-d", dest}, "chart directory " + missing + " does not exist"},
		{"package a directory that is not a chart", []string{"package", notChart, "-d", dest}, notChart + " is not a chart directory: it has no Chart.yaml"},
		{"package with an unknown key", []string{"package", chartDir, "--sign", "--key", "nobody", "--keyring", key.Secring, "-d", dest}, `has no private key "nobody"`},
		{"package with a missing keyring", []string{"package", chartDir, "--sign", "--key", key.Name, "--keyring", missing, "-d", dest}, "read keyring " + missing},
		{"package with a public keyring", []string{"package", chartDir, "--sign", "--key", key.Name, "--keyring", key.Pubring, "-d", dest}, "holds its public key only"},
		{"package --sign without --key", []string{"package", chartDir, "--sign", "--keyring", key.Secring, "-d", dest}, "--key is required for signing a package"},
		{"package without a path", []string{"package", "-d", dest}, "need at least one argument, the path to the chart"},
		{"create from an unknown starter", []string{"create", filepath.Join(work, "new"), "--starter", "no-such-starter"}, `starter "no-such-starter" not found`},
		{"create from a missing starter path", []string{"create", filepath.Join(work, "new"), "--starter", missing}, `starter "` + missing + `" not found`},
		{"verify a missing archive", []string{"verify", filepath.Join(work, "none.tgz"), "--keyring", key.Pubring}, "no such file"},
		{"verify an unsigned archive", []string{"verify", berthtest.PackageChart(t, chartDir, t.TempDir()), "--keyring", key.Pubring}, "could not load provenance file"},
	}
	before := berthtest.FileDigests(t, work)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := berthtest.RunBerth(t, tt.args...)
			if err == nil {
				t.Fatalf("berth %s succeeded:\n%s", strings.Join(tt.args, " "), out)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("berth %s said:\n%s\nwant %q in it", strings.Join(tt.args, " "), stderr, tt.want)
			}
			if diff := cmp.Diff(before, berthtest.FileDigests(t, work)); diff != "" {
				t.Errorf("files changed (-before +after):\n%s", diff)
			}
			if _, err := os.Stat(dest); !os.IsNotExist(err) {
				t.Errorf("the destination %s was made: %v", dest, err)
			}
		})
	}
}
