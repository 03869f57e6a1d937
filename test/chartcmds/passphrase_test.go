package chartcmds

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/test/berthtest"
)

// TestPackageEncryptedKey: a key with a passphrase signs with the passphrase read from
// --passphrase-file, or from standard input with "-"; a wrong one signs nothing.
func TestPackageEncryptedKey(t *testing.T) {
	t.Parallel()
	key := berthtest.NewEncryptedSigningKey(t, "locked", "s3cret")
	secring, pubring := key.Secring, key.Pubring
	passFile := filepath.Join(t.TempDir(), "pass")
	if err := os.WriteFile(passFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := configMapChart(t, "shop")
	tests := []struct {
		name, file, stdin string
		wantErr           string
	}{
		{name: "from a file", file: passFile},
		{name: "from standard input", file: "-", stdin: "s3cret\n"},
		{name: "a wrong passphrase", file: "-", stdin: "guess\n", wantErr: `decrypt signing key "locked"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dest := filepath.Join(t.TempDir(), "out")
			var out, errOut bytes.Buffer
			err := cli.Run(t.Context(), cli.Streams{In: strings.NewReader(tt.stdin), Out: &out, ErrOut: &errOut},
				[]string{"package", dir, "--sign", "--key", "locked", "--keyring", secring, "--passphrase-file", tt.file, "-d", dest})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("package: %v, want %q", err, tt.wantErr)
				}
				if _, err := os.Stat(dest); !os.IsNotExist(err) {
					t.Errorf("a failed signing made %s: %v", dest, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("package: %v\n%s", err, errOut.String())
			}
			mustHelm(t, "verify", filepath.Join(dest, "shop-0.1.0.tgz"), "--keyring", pubring)
		})
	}
}
