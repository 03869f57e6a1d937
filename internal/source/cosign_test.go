package source_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	helmcli "helm.sh/helm/v4/pkg/cli"

	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/test/berthtest"
)

// TestCosignVerifiesRegistryCharts: a chart of an OCI registry signed with a cosign key, in
// the bundle format (a referrer) or in the tag schema (a .sig tag), is located and pulled with
// the proof of who signed it; one signed by another key, or not signed, fails as unverified
// naming the reason, and leaves nothing in the cache or the destination.
func TestCosignVerifiesRegistryCharts(t *testing.T) {
	berthtest.IsolateHelmFiles(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	plain := source.RegistryOptions{PlainHTTP: true}
	key, other := berthtest.NewCosignKey(t), berthtest.NewCosignKey(t)

	bundled := push(t, helmcli.New(), webChart(t, "0.1.0"), reg.Ref("bundled"), plain)
	key.SignBundle(t, reg, "bundled/web", bundled)
	tagged := push(t, helmcli.New(), webChart(t, "0.1.0"), reg.Ref("tagged"), plain)
	key.SignTagged(t, reg, "tagged/web", tagged)
	push(t, helmcli.New(), webChart(t, "0.1.0"), reg.Ref("unsigned"), plain)
	wrong := push(t, helmcli.New(), webChart(t, "0.1.0"), reg.Ref("wrong"), plain)
	other.SignBundle(t, reg, "wrong/web", wrong)

	resolver := func(t *testing.T, s *helmcli.EnvSettings) *source.Resolver {
		opts := source.Options{Cosign: &provenance.CosignOptions{PublicKey: key.PublicPEM}}
		opts.Version, opts.PlainHTTP = "0.1.0", true
		return &source.Resolver{Settings: s, Options: opts}
	}
	for _, tc := range []struct {
		repo, digest string
	}{{"bundled", bundled}, {"tagged", tagged}} {
		t.Run("signed/"+tc.repo, func(t *testing.T) {
			ref := reg.Ref(tc.repo + "/web")
			path, proof, err := resolver(t, settingsIn(t)).LocateVerified(t.Context(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatal(err)
			}
			if proof == nil || proof.Provider != release.ProviderCosign || proof.Digest != tc.digest || proof.Reference != ref || proof.Signer == "" {
				t.Fatalf("proof %+v, want cosign of %s signed by the key", proof, tc.digest)
			}
			dest := t.TempDir()
			_, pulled, err := resolver(t, settingsIn(t)).PullVerified(t.Context(), ref, source.PullOptions{DestDir: dest})
			if err != nil {
				t.Fatal(err)
			}
			if pulled == nil || pulled.Signer != proof.Signer {
				t.Fatalf("pull's proof %+v, want the signer %s", pulled, proof.Signer)
			}
			if _, err := os.Stat(filepath.Join(dest, "web-0.1.0.tgz")); err != nil {
				t.Fatalf("pull left no web-0.1.0.tgz: %v", err)
			}
		})
	}
	for _, tc := range []struct {
		repo   string
		reason provenance.Reason
	}{{"unsigned", provenance.ReasonNoSignature}, {"wrong", provenance.ReasonUntrusted}} {
		t.Run("refused/"+tc.repo, func(t *testing.T) {
			s := settingsIn(t)
			_, _, err := resolver(t, s).LocateVerified(t.Context(), reg.Ref(tc.repo+"/web"))
			var serr *source.Error
			var perr *provenance.Error
			if !errors.As(err, &serr) || serr.Kind != source.KindUnverified || !errors.As(err, &perr) || perr.Reason != tc.reason {
				t.Fatalf("got %v, want an unverified chart for %s", err, tc.reason)
			}
			if left := berthtest.FileDigests(t, s.ContentCache); len(left) != 0 {
				t.Errorf("the refused chart left %d files in the cache", len(left))
			}
			dest := t.TempDir()
			if _, _, err := resolver(t, settingsIn(t)).PullVerified(t.Context(), reg.Ref(tc.repo+"/web"), source.PullOptions{DestDir: dest}); !errors.As(err, &perr) {
				t.Fatalf("pull: got %v, want the signature's error", err)
			}
			if left := berthtest.FileDigests(t, dest); len(left) != 0 {
				t.Errorf("the refused pull left %d files in the destination", len(left))
			}
		})
	}
	t.Run("not in a registry", func(t *testing.T) {
		_, _, err := resolver(t, settingsIn(t)).LocateVerified(t.Context(), webChart(t, "0.1.0"))
		var serr *source.Error
		if !errors.Is(err, source.ErrNotSigned) || !errors.As(err, &serr) || serr.Kind != source.KindUnverified {
			t.Fatalf("got %v, want ErrNotSigned", err)
		}
	})
}

// TestCosignKeyless: a chart signed keyless (a certificate for an OIDC identity, a transparency
// log entry and a timestamp, by the test's own Sigstore) is located with the proof of the
// identity, its issuer and log index, when the identity, issuer and trusted root match; with
// another identity, issuer or root it is refused, naming why.
func TestCosignKeyless(t *testing.T) {
	berthtest.IsolateHelmFiles(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	sigstore, other := berthtest.NewSigstore(t), berthtest.NewSigstore(t)
	const id, iss = "https://github.com/acme/charts/.github/workflows/release.yml@refs/heads/main", "https://token.actions.githubusercontent.com"
	dgst := push(t, helmcli.New(), webChart(t, "0.1.0"), reg.Ref("keyless"), source.RegistryOptions{PlainHTTP: true})
	index := sigstore.SignBundle(t, reg, "keyless/web", dgst, id, iss)
	readRoot := func(s *berthtest.Sigstore) []byte {
		data, err := os.ReadFile(s.WriteTrustedRoot(t, t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	trusted, untrusted := readRoot(sigstore), readRoot(other)

	for _, tc := range []struct {
		name   string
		opts   provenance.CosignOptions
		reason provenance.Reason
	}{
		{name: "identity and issuer", opts: provenance.CosignOptions{CertificateIdentity: id, CertificateOIDCIssuer: iss, TrustedRoot: trusted}},
		{name: "regexps", opts: provenance.CosignOptions{CertificateIdentityRegexp: `https://github\.com/acme/.*`, CertificateOIDCIssuerRegexp: `https://token\.actions\.githubusercontent\.com`, TrustedRoot: trusted}},
		{name: "another identity", opts: provenance.CosignOptions{CertificateIdentity: "https://github.com/evil/charts", CertificateOIDCIssuer: iss, TrustedRoot: trusted}, reason: provenance.ReasonWrongIdentity},
		{name: "another issuer", opts: provenance.CosignOptions{CertificateIdentity: id, CertificateOIDCIssuer: "https://accounts.google.com", TrustedRoot: trusted}, reason: provenance.ReasonWrongIssuer},
		{name: "another root", opts: provenance.CosignOptions{CertificateIdentity: id, CertificateOIDCIssuer: iss, TrustedRoot: untrusted}, reason: provenance.ReasonNotInLog},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := source.Options{Cosign: &tc.opts}
			opts.Version, opts.PlainHTTP = "0.1.0", true
			r := &source.Resolver{Settings: settingsIn(t), Options: opts}
			_, proof, err := r.LocateVerified(t.Context(), reg.Ref("keyless/web"))
			if tc.reason != "" {
				var perr *provenance.Error
				if !errors.As(err, &perr) || perr.Reason != tc.reason {
					t.Fatalf("got %v, want %s", err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if proof.Signer != id || proof.Issuer != iss || proof.LogIndex == nil || *proof.LogIndex != index || proof.Digest != dgst {
				t.Fatalf("proof %+v, want %s of %s at log index %d", proof, id, iss, index)
			}
		})
	}
}
