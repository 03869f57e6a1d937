package berthtest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"helm.sh/helm/v4/pkg/action"
)

// SigningKey is an OpenPGP key made for a test: Secring holds it to sign charts with, Pubring
// its public half, the keyring to verify them with (--keyring).
type SigningKey struct {
	Name             string
	Secring, Pubring string
}

// NewSigningKey makes an unencrypted OpenPGP key named name and writes its keyrings into
// t.TempDir().
func NewSigningKey(t testing.TB, name string) SigningKey {
	t.Helper()
	return newSigningKey(t, name, "")
}

// NewEncryptedSigningKey makes an OpenPGP key named name whose secret parts are encrypted with
// passphrase, and writes its keyrings into t.TempDir().
func NewEncryptedSigningKey(t testing.TB, name, passphrase string) SigningKey {
	t.Helper()
	return newSigningKey(t, name, passphrase)
}

func newSigningKey(t testing.TB, name, passphrase string) SigningKey {
	t.Helper()
	e, err := openpgp.NewEntity(name, "berth test key", name+"@berth.invalid", nil)
	if err != nil {
		t.Fatalf("make a signing key: %v", err)
	}
	dir := t.TempDir()
	k := SigningKey{Name: name, Secring: filepath.Join(dir, "secring.gpg"), Pubring: filepath.Join(dir, "pubring.gpg")}
	var pub, sec bytes.Buffer
	if err := e.Serialize(&pub); err != nil {
		t.Fatalf("write the public keyring: %v", err)
	}
	if passphrase == "" {
		err = e.SerializePrivate(&sec, nil)
	} else if err = e.EncryptPrivateKeys([]byte(passphrase), nil); err == nil {
		err = e.SerializePrivateWithoutSigning(&sec, nil)
	}
	if err != nil {
		t.Fatalf("write the secret keyring: %v", err)
	}
	for path, b := range map[string][]byte{k.Secring: sec.Bytes(), k.Pubring: pub.Bytes()} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

// PublishSigned packages the charts in chartDirs into the repository with a provenance file
// signed by key, as `helm package --sign` makes it, and rewrites the index.
func (r *ChartRepo) PublishSigned(t testing.TB, key SigningKey, chartDirs ...string) {
	t.Helper()
	for _, dir := range chartDirs {
		archive := PackageChart(t, dir, r.Dir)
		p := action.NewPackage()
		p.Sign, p.Key, p.Keyring = true, key.Name, key.Secring
		if err := p.Clearsign(archive); err != nil {
			t.Fatalf("sign %s: %v", archive, err)
		}
	}
	r.Reindex(t)
}
