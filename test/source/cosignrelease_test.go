package source

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestCosignVerifiedRelease: a chart of an OCI registry signed with a cosign key installs with
// --cosign-key, and the release says who signed which digest; one signed by another key is
// refused, named, before anything changes; an upgrade with --reuse-values asks for the key
// again; template and pull verify too; helm reads and rolls back what berth recorded.
func TestCosignVerifiedRelease(t *testing.T) {
	berthtest.UseHelmHome(t)
	env := testenv.New(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	key, other := berthtest.NewCosignKey(t), berthtest.NewCosignKey(t)
	dir := t.TempDir()
	pub := key.WritePublic(t, dir)
	files := map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-{{ .Release.Name }}\ndata:\n  version: {{ .Chart.Version | quote }}\n"}
	pushed := regexp.MustCompile(`Digest: (sha256:[0-9a-f]{64})`)
	publish := func(repo, version string, by berthtest.CosignKey) string {
		t.Helper()
		out := mustBerth(t, "push", berthtest.PackageNewChart(t, "web", version, files), reg.Ref(repo), "--plain-http")
		m := pushed.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("berth push printed no digest:\n%s", out)
		}
		by.SignBundle(t, reg, repo+"/web", m[1])
		return m[1]
	}
	signed := publish("signed", "1.0.0", key)
	publish("signed", "1.1.0", key)
	publish("forged", "1.0.0", other)
	berth := func(args ...string) string {
		t.Helper()
		out, _ := berthtest.MustBerth(t, env, args...)
		return out
	}

	// Signed by another key: refused before anything changes, naming the reference, digest
	// and reason.
	_, _, err := berthtest.Berth(t, env, "install", "forged", reg.Ref("forged/web"), "--version", "1.0.0", "--plain-http", "--cosign-key", pub)
	if err == nil || !strings.Contains(err.Error(), reg.Ref("forged/web")) || !strings.Contains(err.Error(), "cosign verification: Untrusted") || !strings.Contains(err.Error(), "--cosign-key") {
		t.Errorf("berth install of a chart signed by another key: %v, want it refused as Untrusted", err)
	}
	if out, _, _ := berthtest.Berth(t, env, "list", "-q", "-a"); strings.Contains(out, "forged") {
		t.Errorf("a refused install left a release:\n%s", out)
	}

	berth("install", "good", reg.Ref("signed/web"), "--version", "1.0.0", "--plain-http", "--cosign-key", pub)
	want := regexp.MustCompile(`\nVERIFIED: cosign, signed by sha256:[0-9a-f]{64}; ` + regexp.QuoteMeta(signed) + `; from ` + regexp.QuoteMeta(reg.Ref("signed/web")) + `\n`)
	if status := berth("status", "good"); !want.MatchString(status) {
		t.Errorf("berth status of a cosign-verified install printed:\n%s", status)
	}

	// --reuse-values keeps the verification: without the key, the upgrade is refused.
	_, _, err = berthtest.Berth(t, env, "upgrade", "good", reg.Ref("signed/web"), "--version", "1.1.0", "--plain-http", "--reuse-values")
	if err == nil || !strings.Contains(err.Error(), "verified with cosign") || !strings.Contains(err.Error(), "--cosign-key") {
		t.Errorf("berth upgrade --reuse-values without the key: %v, want it refused, naming --cosign-key", err)
	}
	berth("upgrade", "good", reg.Ref("signed/web"), "--version", "1.1.0", "--plain-http", "--reuse-values", "--cosign-key", pub)
	if deployedVersion(t, env, "web", "good") != "1.1.0" || !strings.Contains(berth("status", "good"), "\nVERIFIED: cosign") {
		t.Error("the upgrade with the key did not deploy a verified 1.1.0")
	}

	// helm reads the records and rolls back; the rollback keeps revision 1's proof.
	berthtest.MustHelm(t, env, "rollback", "good", "1")
	history := berth("history", "good")
	for _, row := range []string{`(?m)^1\s.*1\.0\.0\s+cosign\s+Install complete`, `(?m)^3\s.*1\.0\.0\s+cosign\s+Rollback to 1`} {
		if !regexp.MustCompile(row).MatchString(history) {
			t.Errorf("berth history printed\n%s\nwithout %s", history, row)
		}
	}

	// template and pull verify alike, before they write anything.
	if _, _, err := berthtest.Berth(t, env, "template", "x", reg.Ref("forged/web"), "--version", "1.0.0", "--plain-http", "--cosign-key", pub); err == nil {
		t.Error("berth template of a chart signed by another key succeeded")
	}
	dest := t.TempDir()
	out := berth("pull", reg.Ref("signed/web"), "--version", "1.0.0", "--plain-http", "--cosign-key", pub, "--destination", dest)
	if !strings.Contains(out, "Verified with cosign: "+signed) {
		t.Errorf("berth pull printed %q, want the verified digest", out)
	}
	if _, err := os.Stat(filepath.Join(dest, "web-1.0.0.tgz")); err != nil {
		t.Errorf("berth pull left no archive: %v", err)
	}
}

// TestCosignKeylessInstall: a chart signed keyless (by the test's own Sigstore) installs with
// cosign's identity and issuer flags and a trusted root file, and berth status names the
// identity, its issuer and the log entry; another identity is refused, naming the flag to
// check; keyless flags without a trusted root are refused before anything is fetched.
func TestCosignKeylessInstall(t *testing.T) {
	berthtest.UseHelmHome(t)
	env := testenv.New(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	sigstore := berthtest.NewSigstore(t)
	trusted := sigstore.WriteTrustedRoot(t, t.TempDir())
	const id, iss = "https://github.com/acme/charts/.github/workflows/release.yml@refs/heads/main", "https://token.actions.githubusercontent.com"
	files := map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-{{ .Release.Name }}\ndata:\n  version: {{ .Chart.Version | quote }}\n"}
	out := mustBerth(t, "push", berthtest.PackageNewChart(t, "web", "1.0.0", files), reg.Ref("keyless"), "--plain-http")
	m := regexp.MustCompile(`Digest: (sha256:[0-9a-f]{64})`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("berth push printed no digest:\n%s", out)
	}
	index := sigstore.SignBundle(t, reg, "keyless/web", m[1], id, iss)
	ref := reg.Ref("keyless/web")

	_, _, err := berthtest.Berth(t, env, "install", "other", ref, "--plain-http", "--certificate-identity", "https://github.com/evil/charts", "--certificate-oidc-issuer", iss, "--trusted-root", trusted)
	if err == nil || !strings.Contains(err.Error(), "WrongIdentity") || !strings.Contains(err.Error(), "--certificate-identity") {
		t.Errorf("berth install signed by another identity: %v, want WrongIdentity naming --certificate-identity", err)
	}
	_, _, err = berthtest.Berth(t, env, "install", "other", ref, "--plain-http", "--certificate-identity", id, "--certificate-oidc-issuer", iss)
	if err == nil || !strings.Contains(err.Error(), "--trusted-root") {
		t.Errorf("berth install keyless without a trusted root: %v, want it refused naming --trusted-root", err)
	}
	if out, _, _ := berthtest.Berth(t, env, "list", "-q", "-a"); strings.Contains(out, "other") {
		t.Errorf("a refused install left a release:\n%s", out)
	}

	if _, _, err := berthtest.Berth(t, env, "install", "good", ref, "--plain-http", "--certificate-identity-regexp", `https://github\.com/acme/.*`, "--certificate-oidc-issuer", iss, "--trusted-root", trusted); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("\nVERIFIED: cosign, signed by %s (issuer %s); transparency log index %d; %s; from %s\n", id, iss, index, m[1], ref)
	if status, _ := berthtest.MustBerth(t, env, "status", "good"); !strings.Contains(status, want) {
		t.Errorf("berth status printed\n%s\nwithout %q", status, want)
	}
}

// TestNotationVerifiedRelease: a chart signed with notation installs with notation's own
// configuration (a trust policy and a trust store in a directory), and berth status names the
// signing certificate's subject; a chart signed by a CA the trust store does not hold is refused,
// named; an upgrade with --reuse-values verifies again with notation's files.
func TestNotationVerifiedRelease(t *testing.T) {
	berthtest.UseHelmHome(t)
	env := testenv.New(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	ca, other := berthtest.NewNotationCA(t, "release"), berthtest.NewNotationCA(t, "other")
	files := map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-{{ .Release.Name }}\ndata:\n  version: {{ .Chart.Version | quote }}\n"}
	pushed := regexp.MustCompile(`Digest: (sha256:[0-9a-f]{64})`)
	publish := func(repo, version string, by *berthtest.NotationCA) string {
		t.Helper()
		out := mustBerth(t, "push", berthtest.PackageNewChart(t, "web", version, files), reg.Ref(repo), "--plain-http")
		m := pushed.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("berth push printed no digest:\n%s", out)
		}
		reg.NotationSign(t, repo+"/web", m[1], by)
		return m[1]
	}
	signed := publish("signed", "1.0.0", ca)
	publish("signed", "1.1.0", ca)
	publish("forged", "1.0.0", other)

	// notation's configuration directory, as `notation policy import` and `notation cert add`
	// leave it.
	config := t.TempDir()
	store := filepath.Join(config, "truststore", "x509", "ca", "release")
	if err := os.MkdirAll(store, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, "root.crt"), ca.RootPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(config, "trustpolicy.oci.json"), berthtest.NotationTrustPolicy("*", "release", berthtest.NotationTrustedIdentity), 0o600); err != nil {
		t.Fatal(err)
	}

	_, _, err := berthtest.Berth(t, env, "install", "forged", reg.Ref("forged/web"), "--plain-http", "--notation-config", config)
	if err == nil || !strings.Contains(err.Error(), "notation verification: Untrusted") || !strings.Contains(err.Error(), "trust store") {
		t.Errorf("berth install of a chart signed by another CA: %v, want it refused as Untrusted", err)
	}
	berthtest.MustBerth(t, env, "install", "good", reg.Ref("signed/web"), "--version", "1.0.0", "--plain-http", "--notation-config", config)
	want := "\nVERIFIED: notation, signed by CN=berth test signer,O=Berth,L=Seattle,ST=WA,C=US; " + signed + "; from " + reg.Ref("signed/web") + "\n"
	if status, _ := berthtest.MustBerth(t, env, "status", "good"); !strings.Contains(status, want) {
		t.Errorf("berth status printed\n%s\nwithout %q", status, want)
	}

	// --reuse-values verifies again, with notation's own directory ($NOTATION_CONFIG).
	t.Setenv("NOTATION_CONFIG", config)
	berthtest.MustBerth(t, env, "upgrade", "good", reg.Ref("signed/web"), "--version", "1.1.0", "--plain-http", "--reuse-values")
	if status, _ := berthtest.MustBerth(t, env, "status", "good"); !strings.Contains(status, "\nVERIFIED: notation") || deployedVersion(t, env, "web", "good") != "1.1.0" {
		t.Errorf("an upgrade with --reuse-values of a notation-verified release was not verified:\n%s", status)
	}
}
