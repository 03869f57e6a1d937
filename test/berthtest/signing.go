package berthtest

import (
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
	e, err := openpgp.NewEntity(name, "berth test key", name+"@berth.invalid", nil)
	if err != nil {
		t.Fatalf("make a signing key: %v", err)
	}
	dir := t.TempDir()
	k := SigningKey{Name: name, Secring: filepath.Join(dir, "secring.gpg"), Pubring: filepath.Join(dir, "pubring.gpg")}
	for path, write := range map[string]func(*os.File) error{
		k.Secring: func(f *os.File) error { return e.SerializePrivate(f, nil) },
		k.Pubring: func(f *os.File) error { return e.Serialize(f) },
	} {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := write(f); err != nil {
			t.Fatalf("write keyring %s: %v", path, err)
		}
		if err := f.Close(); err != nil {
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
