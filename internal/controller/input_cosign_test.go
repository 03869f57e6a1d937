package controller

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/release"
)

func TestVerifyOf(t *testing.T) {
	keyless := func(mod func(*v1alpha1.CosignVerification)) *v1alpha1.CosignVerification {
		c := &v1alpha1.CosignVerification{Identity: "ci@example.test", Issuer: "https://issuer.example.test",
			TrustedRoot: &v1alpha1.SecretKeyReference{Name: "sigstore"}}
		if mod != nil {
			mod(c)
		}
		return c
	}
	withKey := &v1alpha1.CosignVerification{Key: &v1alpha1.SecretKeyReference{Name: "cosign"}}
	tests := []struct {
		name      string
		v         v1alpha1.KeyringReference
		helmRepo  bool
		want      chartRef
		wantField string
	}{
		{name: "pgp by default", v: v1alpha1.KeyringReference{Name: "keyring"},
			want: chartRef{Verify: "keyring", VerifyKey: "pubring.gpg"}},
		{name: "pgp without a name", v: v1alpha1.KeyringReference{Provider: "pgp"}, wantField: "chart.verify.name"},
		{name: "pgp with a cosign block", v: v1alpha1.KeyringReference{Name: "keyring", Cosign: withKey}, wantField: "chart.verify.cosign"},
		{name: "cosign key with its default key", v: v1alpha1.KeyringReference{Provider: "cosign", Cosign: withKey},
			want: chartRef{Cosign: &cosignRef{Key: "cosign", KeyKey: "cosign.pub"}}},
		{name: "cosign keyless", v: v1alpha1.KeyringReference{Provider: "cosign", Cosign: keyless(nil)},
			want: chartRef{Cosign: &cosignRef{Identity: "ci@example.test", Issuer: "https://issuer.example.test", Root: "sigstore", RootKey: "trusted_root.json"}}},
		{name: "cosign of a Helm repository", v: v1alpha1.KeyringReference{Provider: "cosign", Cosign: withKey}, helmRepo: true, wantField: "chart.verify.provider"},
		{name: "notation", v: v1alpha1.KeyringReference{Provider: "notation", Notation: &v1alpha1.NotationVerification{Name: "trust"}},
			want: chartRef{Notation: "trust"}},
		{name: "notation of a Helm repository", v: v1alpha1.KeyringReference{Provider: "notation", Notation: &v1alpha1.NotationVerification{Name: "trust"}}, helmRepo: true, wantField: "chart.verify.provider"},
		{name: "notation without its block", v: v1alpha1.KeyringReference{Provider: "notation"}, wantField: "chart.verify.notation"},
		{name: "notation with a cosign block", v: v1alpha1.KeyringReference{Provider: "notation", Notation: &v1alpha1.NotationVerification{Name: "trust"}, Cosign: withKey}, wantField: "chart.verify.name"},
		{name: "pgp with a notation block", v: v1alpha1.KeyringReference{Name: "keyring", Notation: &v1alpha1.NotationVerification{Name: "trust"}}, wantField: "chart.verify.notation"},
		{name: "cosign with a keyring name", v: v1alpha1.KeyringReference{Provider: "cosign", Name: "keyring", Cosign: withKey}, wantField: "chart.verify.name"},
		{name: "cosign without its block", v: v1alpha1.KeyringReference{Provider: "cosign"}, wantField: "chart.verify.cosign"},
		{name: "key and keyless", v: v1alpha1.KeyringReference{Provider: "cosign", Cosign: keyless(func(c *v1alpha1.CosignVerification) { c.Key = withKey.Key })},
			wantField: "chart.verify.cosign.key"},
		{name: "keyless without a trusted root", v: v1alpha1.KeyringReference{Provider: "cosign", Cosign: keyless(func(c *v1alpha1.CosignVerification) { c.TrustedRoot = nil })},
			wantField: "chart.verify.cosign.trustedRoot"},
		{name: "keyless without an identity", v: v1alpha1.KeyringReference{Provider: "cosign", Cosign: keyless(func(c *v1alpha1.CosignVerification) { c.Identity = "" })},
			wantField: "chart.verify.cosign.identity"},
		{name: "identity both ways", v: v1alpha1.KeyringReference{Provider: "cosign", Cosign: keyless(func(c *v1alpha1.CosignVerification) { c.IdentityRegexp = ".*" })},
			wantField: "chart.verify.cosign.identity"},
		{name: "issuer both ways", v: v1alpha1.KeyringReference{Provider: "cosign", Cosign: keyless(func(c *v1alpha1.CosignVerification) { c.IssuerRegexp = ".*" })},
			wantField: "chart.verify.cosign.issuer"},
		{name: "identity regexp that does not compile", v: v1alpha1.KeyringReference{Provider: "cosign", Cosign: keyless(func(c *v1alpha1.CosignVerification) {
			c.Identity, c.IdentityRegexp = "", "(ci"
		})}, wantField: "chart.verify.cosign.identityRegexp"},
		{name: "unknown provider", v: v1alpha1.KeyringReference{Provider: "x509"}, wantField: "chart.verify.provider"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ref chartRef
			err := verifyOf(&tc.v, !tc.helmRepo, &ref)
			var specErr *SpecError
			if tc.wantField != "" {
				if !errors.As(err, &specErr) || specErr.Field != tc.wantField || specErr.Reason != ReasonInvalidSpec {
					t.Fatalf("error %v, want an InvalidSpec naming spec.%s", err, tc.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ref); diff != "" {
				t.Errorf("chartRef (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFetchKeyNamesTheVerification: two asks for the same chart share a fetch only when they
// verify it the same way: any difference of key, identity, issuer or trusted root parts them.
func TestFetchKeyNamesTheVerification(t *testing.T) {
	ref := chartRef{Ref: "oci://registry.example.test/charts/web", Version: "0.3.0", Cosign: &cosignRef{}}
	base := provenance.CosignOptions{PublicKey: []byte("key A")}
	variants := map[string]*provenance.CosignOptions{
		"none":            nil,
		"key A":           &base,
		"key B":           {PublicKey: []byte("key B")},
		"identity":        {CertificateIdentity: "a", CertificateOIDCIssuer: "i", TrustedRoot: []byte("root")},
		"identity regexp": {CertificateIdentityRegexp: "a", CertificateOIDCIssuer: "i", TrustedRoot: []byte("root")},
		"other issuer":    {CertificateIdentity: "a", CertificateOIDCIssuer: "j", TrustedRoot: []byte("root")},
		"other root":      {CertificateIdentity: "a", CertificateOIDCIssuer: "i", TrustedRoot: []byte("root 2")},
	}
	seen := map[string]string{}
	for name, o := range variants {
		k := fetchKey(ref, chartAccess{Cosign: o})
		if other, ok := seen[k]; ok {
			t.Errorf("%s and %s share a fetch key", name, other)
		}
		seen[k] = name
	}
	if fetchKey(ref, chartAccess{Cosign: &base}) != fetchKey(ref, chartAccess{Cosign: &provenance.CosignOptions{PublicKey: []byte("key A")}}) {
		t.Error("the same verification gives two fetch keys")
	}
}

func TestSignerPolicy(t *testing.T) {
	p, err := NewSignerPolicy([]string{`sha256:ab.*`, `ci@example\.test`}, []string{`https://issuer\.example\.test`})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		proof    *release.Provenance
		wantFlag string
	}{
		{name: "no proof", proof: nil},
		{name: "allowed key", proof: &release.Provenance{Signer: "sha256:abcd"}},
		{name: "other key", proof: &release.Provenance{Signer: "sha256:cdef"}, wantFlag: "--allowed-signer"},
		{name: "anchored", proof: &release.Provenance{Signer: "evil-ci@example.test", Issuer: "https://issuer.example.test"}, wantFlag: "--allowed-signer"},
		{name: "allowed keyless", proof: &release.Provenance{Signer: "ci@example.test", Issuer: "https://issuer.example.test"}},
		{name: "other issuer", proof: &release.Provenance{Signer: "ci@example.test", Issuer: "https://issuer.example.test.evil"}, wantFlag: "--allowed-issuer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := p.allows(tc.proof)
			var refused *SignerNotAllowedError
			switch {
			case tc.wantFlag == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantFlag != "" && (!errors.As(err, &refused) || refused.Flag != tc.wantFlag):
				t.Fatalf("error %v, want one of %s", err, tc.wantFlag)
			case tc.wantFlag != "" && !strings.Contains(err.Error(), tc.proof.Signer):
				t.Errorf("message %q does not name the signer", err)
			}
		})
	}
	if _, err := NewSignerPolicy([]string{"(unclosed"}, nil); !errors.As(err, new(*SignerPolicyError)) {
		t.Errorf("error %v, want a SignerPolicyError", err)
	}
	if _, err := signerPolicyOf(Options{AllowedSigners: []string{"x"}}); !errors.Is(err, ErrSignersWithoutRequire) {
		t.Errorf("error %v, want ErrSignersWithoutRequire", err)
	}
}

// FuzzVerifyOf: no spec.chart.verify a tenant writes makes the check panic, and what it accepts
// compiles as cosign will compile it.
func FuzzVerifyOf(f *testing.F) {
	f.Add("cosign", "", "ci@example.test", "", "https://issuer.example.test", "", "root")
	f.Add("cosign", "key", "", "", "", "", "")
	f.Add("cosign", "", "", "(a|b", "", ".*", "root")
	f.Add("pgp", "", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, provider, key, identity, identityRe, issuer, issuerRe, root string) {
		c := &v1alpha1.CosignVerification{Identity: identity, IdentityRegexp: identityRe, Issuer: issuer, IssuerRegexp: issuerRe}
		if key != "" {
			c.Key = &v1alpha1.SecretKeyReference{Name: key}
		}
		if root != "" {
			c.TrustedRoot = &v1alpha1.SecretKeyReference{Name: root}
		}
		var ref chartRef
		if err := verifyOf(&v1alpha1.KeyringReference{Provider: provider, Cosign: c}, true, &ref); err != nil {
			if !errors.As(err, new(*SpecError)) {
				t.Fatalf("error %v is no SpecError", err)
			}
			return
		}
		if ref.Cosign == nil || (ref.Cosign.Key == "") == (ref.Cosign.Root == "") {
			t.Fatalf("accepted %+v: want a key or a trusted root, one of them", ref.Cosign)
		}
	})
}
