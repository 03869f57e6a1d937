package source

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// cosignSigned are charts in a test's OCI registry (TLS, with its own CA) that the real cosign
// CLI signed, offline, with a key it generated: web 1.0.0 in bundle/web signed in the Sigstore
// bundle format (a referrer; the distribution registry has no referrers API, so cosign and oras
// both list it under the referrers tag sha256-<hex>), in tagged/web in the older format (the
// sha256-<hex>.sig tag), and in unsigned/web not signed at all.
type cosignSigned struct {
	reg *berthtest.OCIRegistry
	// cosign is where cosign.key and cosign.pub are.
	cosign berthtest.CosignEnv
	// pub is cosign.pub and fingerprint the signer a proof names for it.
	pub, fingerprint string
	// digests are the chart manifests' digests, by repository.
	digests map[string]string
}

// Repositories of cosignSigned.
const (
	bundleRepo   = "bundle/web"
	taggedRepo   = "tagged/web"
	unsignedRepo = "unsigned/web"
)

// pushedDigest is how berth push names the manifest it pushed.
var pushedDigest = regexp.MustCompile(`Digest: (sha256:[0-9a-f]{64})`)

// signWithCosignCLI pushes web 1.0.0 to the three repositories with berth push and signs it with
// the cosign CLI: `cosign sign --key cosign.key` without a transparency log or a signing config
// (the public Sigstore services are unreachable), each format once.
func signWithCosignCLI(t *testing.T) cosignSigned {
	t.Helper()
	s := cosignSigned{
		reg:     berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{}),
		cosign:  berthtest.NewCosignEnv(t, "a cosign key password"),
		digests: map[string]string{},
	}
	berthtest.MustCosign(t, s.cosign, "generate-key-pair")
	s.pub = s.cosign.Path("cosign.pub")
	pem, err := os.ReadFile(s.pub)
	if err != nil {
		t.Fatalf("cosign generate-key-pair wrote no public key: %v", err)
	}
	if _, s.fingerprint, err = provenance.ParsePublicKey(pem); err != nil {
		t.Fatalf("cosign.pub: %v", err)
	}
	files := map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-{{ .Release.Name }}\ndata:\n  version: {{ .Chart.Version | quote }}\n"}
	for _, repo := range []string{bundleRepo, taggedRepo, unsignedRepo} {
		// Each repository's chart is its own, so that no digest is signed in another one.
		files["values.yaml"] = "repository: " + repo + "\n"
		out := mustBerth(t, "push", berthtest.PackageNewChart(t, "web", "1.0.0", files), s.reg.Ref(strings.TrimSuffix(repo, "/web")), "--ca-file", s.reg.CAFile)
		m := pushedDigest.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("berth push printed no digest:\n%s", out)
		}
		s.digests[repo] = m[1]
	}
	sign := []string{"sign", "--key", "cosign.key", "--tlog-upload=false", "--use-signing-config=false", "--registry-cacert", s.reg.CAFile, "--yes"}
	berthtest.MustCosign(t, s.cosign, append(sign, s.ref(bundleRepo))...)
	berthtest.MustCosign(t, s.cosign, append(sign, "--new-bundle-format=false", s.ref(taggedRepo))...)
	return s
}

// ref is cosign's reference of the chart in repo: HOST/REPO@DIGEST.
func (s cosignSigned) ref(repo string) string {
	return s.reg.Host + "/" + repo + "@" + s.digests[repo]
}

// verify verifies the chart in repo with provenance.Verify, reading the registry through oras
// with the registry's CA, against the PEM public key pub.
func (s cosignSigned) verify(t *testing.T, repo string, pub []byte) (*provenance.Proof, error) {
	t.Helper()
	return provenance.Verify(t.Context(), provenance.VerifyOptions{
		Repository: s.reg.Repository(t, repo),
		Reference:  s.reg.Host + "/" + repo + ":1.0.0",
		Digest:     digest.Digest(s.digests[repo]),
		Cosign:     &provenance.CosignOptions{PublicKey: pub},
	})
}

// TestCosignCLISignaturesVerify: signatures the cosign CLI made, in the Sigstore bundle format
// and in the older tag format, verify with its cosign.pub and say which format they were found
// in; with another key they are untrusted, and an unsigned chart has no signature. cosign
// itself agrees on each.
func TestCosignCLISignaturesVerify(t *testing.T) {
	berthtest.UseHelmHome(t)
	s := signWithCosignCLI(t)
	pub, err := os.ReadFile(s.pub)
	if err != nil {
		t.Fatal(err)
	}
	other := berthtest.NewCosignKey(t)

	for _, tc := range []struct {
		repo, format string
	}{{bundleRepo, "bundle"}, {taggedRepo, "simplesigning"}} {
		proof, err := s.verify(t, tc.repo, pub)
		if err != nil {
			t.Errorf("%s: verify the cosign CLI's signature: %v", tc.repo, err)
			continue
		}
		if proof.Format != tc.format || string(proof.Digest) != s.digests[tc.repo] || proof.Signer != s.fingerprint || proof.Provider != provenance.ProviderCosign {
			t.Errorf("%s: proof %+v, want format %s, digest %s, signer %s", tc.repo, proof, tc.format, s.digests[tc.repo], s.fingerprint)
		}
		_, err = s.verify(t, tc.repo, other.PublicPEM)
		assertReason(t, tc.repo+" with another key", err, provenance.ReasonUntrusted, s.digests[tc.repo])
		// The cosign CLI verifies what it signed, offline (finding the format itself).
		berthtest.MustCosign(t, s.cosign, "verify", "--key", "cosign.pub", "--insecure-ignore-tlog=true", "--registry-cacert", s.reg.CAFile, s.ref(tc.repo))
	}
	_, err = s.verify(t, unsignedRepo, pub)
	assertReason(t, unsignedRepo, err, provenance.ReasonNoSignature, s.digests[unsignedRepo])
}

// assertReason fails the test unless err is a *provenance.Error of reason naming dgst.
func assertReason(t *testing.T, what string, err error, reason provenance.Reason, dgst string) {
	t.Helper()
	var e *provenance.Error
	if !errors.As(err, &e) || e.Reason != reason || e.Digest != dgst || !strings.Contains(err.Error(), dgst) {
		t.Errorf("%s: %v, want a %s error naming %s", what, err, reason, dgst)
	}
}

// TestCosignCLISignedChartInstalls: berth template and berth install with --cosign-key
// cosign.pub take a chart the cosign CLI signed, in either format, and the release records the
// key's fingerprint and the digest; with another key, or for an unsigned chart, both refuse it
// before anything changes, naming the reference, the digest and the reason.
func TestCosignCLISignedChartInstalls(t *testing.T) {
	berthtest.UseHelmHome(t)
	env := testenv.New(t)
	s := signWithCosignCLI(t)
	otherPub := berthtest.NewCosignKey(t).WritePublic(t, t.TempDir())
	chart := func(cmd, name, repo, pub string) []string {
		return []string{cmd, name, s.reg.Ref(repo), "--version", "1.0.0", "--ca-file", s.reg.CAFile, "--cosign-key", pub}
	}

	for _, tc := range []struct {
		repo, name, pub string
		reason          provenance.Reason
	}{
		{bundleRepo, "bundle-other", otherPub, provenance.ReasonUntrusted},
		{taggedRepo, "tagged-other", otherPub, provenance.ReasonUntrusted},
		{unsignedRepo, "unsigned", s.pub, provenance.ReasonNoSignature},
	} {
		for _, cmd := range []string{"template", "install"} {
			_, _, err := berthtest.Berth(t, env, chart(cmd, tc.name, tc.repo, tc.pub)...)
			if err == nil || !strings.Contains(err.Error(), s.reg.Ref(tc.repo)) || !strings.Contains(err.Error(), s.digests[tc.repo]) ||
				!strings.Contains(err.Error(), "cosign verification: "+string(tc.reason)) {
				t.Errorf("berth %s of %s with %s: %v, want it refused as %s, naming the reference and %s", cmd, tc.repo, tc.pub, err, tc.reason, s.digests[tc.repo])
			}
		}
		berthtest.AssertNotRecorded(t, env, tc.name)
		berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-"+tc.name)
	}

	for _, tc := range []struct{ repo, name string }{{bundleRepo, "bundle"}, {taggedRepo, "tagged"}} {
		out, _ := berthtest.MustBerth(t, env, chart("template", tc.name, tc.repo, s.pub)...)
		if !strings.Contains(out, "name: web-"+tc.name+"\n") {
			t.Errorf("berth template of %s printed:\n%s", tc.repo, out)
		}
		berthtest.MustBerth(t, env, chart("install", tc.name, tc.repo, s.pub)...)
		status, _ := berthtest.MustBerth(t, env, "status", tc.name)
		want := "\nVERIFIED: cosign, signed by " + s.fingerprint + "; " + s.digests[tc.repo] + "; from " + s.reg.Ref(tc.repo) + "\n"
		if !strings.Contains(status, want) {
			t.Errorf("berth status of %s printed\n%s\nwithout %q", tc.name, status, want)
		}
		if got := deployedVersion(t, env, "web", tc.name); got != "1.0.0" {
			t.Errorf("%s: deployed chart version %q, want 1.0.0", tc.name, got)
		}
	}
}

// TestCosignCLIVerifiesTestSignatures: the signatures berthtest.CosignKey makes for the other
// tests, a Sigstore bundle referrer and a .sig tag, are ones the cosign CLI verifies too, so
// that those tests sign charts as cosign does.
func TestCosignCLIVerifiesTestSignatures(t *testing.T) {
	berthtest.UseHelmHome(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{})
	key := berthtest.NewCosignKey(t)
	env := berthtest.NewCosignEnv(t, "")
	key.WritePublic(t, env.Dir)
	for _, tc := range []struct {
		repo, how string
		sign      func(t testing.TB, r *berthtest.OCIRegistry, repo, dgst string)
	}{{"bundle", "SignBundle", key.SignBundle}, {"tagged", "SignTagged", key.SignTagged}} {
		files := map[string]string{"values.yaml": "repository: " + tc.repo + "\n"}
		out := mustBerth(t, "push", berthtest.PackageNewChart(t, "web", "1.0.0", files), reg.Ref(tc.repo), "--ca-file", reg.CAFile)
		m := pushedDigest.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("berth push printed no digest:\n%s", out)
		}
		tc.sign(t, reg, tc.repo+"/web", m[1])
		ref := reg.Host + "/" + tc.repo + "/web@" + m[1]
		if _, stderr, err := berthtest.RunCosign(t, env, "verify", "--key", "cosign.pub", "--insecure-ignore-tlog=true", "--registry-cacert", reg.CAFile, ref); err != nil {
			t.Errorf("cosign verify of %s signed by berthtest.CosignKey.%s: %v\n%s", ref, tc.how, err, stderr)
		}
	}
}
