package chartcmds

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/berthdev/berth/internal/cli"
)

// TestPackageEncryptedKey: a key with a passphrase signs with the passphrase read from
// --passphrase-file, or from standard input with "-"; a wrong one signs nothing.
func TestPackageEncryptedKey(t *testing.T) {
	t.Parallel()
	secring, pubring := encryptedKey(t, "locked", "s3cret")
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

// encryptedKey writes an OpenPGP key named name, encrypted with passphrase, and returns its
// secret and public keyrings.
func encryptedKey(t *testing.T, name, passphrase string) (secring, pubring string) {
	t.Helper()
	e, err := openpgp.NewEntity(name, "berth test key", name+"@berth.invalid", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	secring, pubring = filepath.Join(dir, "secring.gpg"), filepath.Join(dir, "pubring.gpg")
	var pub bytes.Buffer
	if err := e.Serialize(&pub); err != nil {
		t.Fatal(err)
	}
	if err := e.EncryptPrivateKeys([]byte(passphrase), nil); err != nil {
		t.Fatal(err)
	}
	var sec bytes.Buffer
	if err := e.SerializePrivateWithoutSigning(&sec, nil); err != nil {
		t.Fatal(err)
	}
	for path, b := range map[string][]byte{secring: sec.Bytes(), pubring: pub.Bytes()} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return secring, pubring
}
