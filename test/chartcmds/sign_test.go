package chartcmds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthdev/berth/test/berthtest"
)

// TestSignAndVerify: berth package --sign makes what helm verify accepts; berth verify accepts
// what helm package --sign makes, printing what helm verify prints, and rejects it once
// tampered with or against another key.
func TestSignAndVerify(t *testing.T) {
	t.Parallel()
	key, other := berthtest.NewSigningKey(t, "signer"), berthtest.NewSigningKey(t, "other")
	dir := configMapChart(t, "shop")

	berthDest := t.TempDir()
	mustBerth(t, "package", dir, "--sign", "--key", key.Name, "--keyring", key.Secring, "-d", berthDest)
	signed := filepath.Join(berthDest, "shop-0.1.0.tgz")
	helmSays := mustHelm(t, "verify", signed, "--keyring", key.Pubring)
	if !strings.Contains(helmSays, "Signed by: signer (berth test key) <signer@berth.invalid>") {
		t.Errorf("helm verify of berth's signed chart printed:\n%s", helmSays)
	}
	if got := mustBerth(t, "verify", signed, "--keyring", key.Pubring); got != helmSays {
		t.Errorf("berth verify printed:\n%s\nhelm verify:\n%s", got, helmSays)
	}

	helmDest := t.TempDir()
	mustHelm(t, "package", dir, "--sign", "--key", key.Name, "--keyring", key.Secring, "-d", helmDest)
	helmSigned := filepath.Join(helmDest, "shop-0.1.0.tgz")
	out := mustBerth(t, "verify", helmSigned, "--keyring", key.Pubring)
	for _, want := range []string{"Signed by: signer (berth test key) <signer@berth.invalid>\n", "Using Key With Fingerprint: ", "Chart Hash Verified: sha256:"} {
		if !strings.Contains(out, want) {
			t.Errorf("berth verify of helm's signed chart printed:\n%s\nwant %q in it", out, want)
		}
	}

	if _, _, err := berthtest.RunBerth(t, "verify", helmSigned, "--keyring", other.Pubring); err == nil {
		t.Error("berth verify against another key passed")
	}
	tampered := filepath.Join(t.TempDir(), "shop-0.1.0.tgz")
	b, err := os.ReadFile(helmSigned)
	if err != nil {
		t.Fatal(err)
	}
	prov, err := os.ReadFile(helmSigned + ".prov")
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(tampered, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tampered+".prov", prov, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, helmErr := berthtest.RunHelm(t, "verify", tampered, "--keyring", key.Pubring)
	_, stderr, err := berthtest.RunBerth(t, "verify", tampered, "--keyring", key.Pubring)
	if err == nil || helmErr == nil {
		t.Errorf("verify of a tampered chart: berth %v, helm %v; want both to fail", err, helmErr)
	}
	if !strings.Contains(stderr, "sha256 sum does not match") {
		t.Errorf("berth verify of a tampered chart said:\n%s", stderr)
	}
}
