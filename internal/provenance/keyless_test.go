package provenance

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
)

// TestCosignKeyless checks keyless signatures made by a virtual Sigstore (a test certificate
// authority and transparency log) against its trusted material.
func TestCosignKeyless(t *testing.T) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	other, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	const id, iss = "https://github.com/acme/charts/.github/workflows/release.yml@refs/heads/main", "https://token.actions.githubusercontent.com"
	manifest := []byte(`{"schemaVersion":2}`)
	d := digest.FromBytes(manifest)
	want, _ := hex.DecodeString(d.Encoded())
	entity, err := vs.Sign(id, iss, manifest)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		opts   CosignOptions
		other  bool
		reason Reason
	}{
		{name: "exact identity and issuer", opts: CosignOptions{CertificateIdentity: id, CertificateOIDCIssuer: iss}},
		{name: "regexps", opts: CosignOptions{CertificateIdentityRegexp: `https://github\.com/acme/.*`, CertificateOIDCIssuerRegexp: `https://token\.actions\..*`}},
		{name: "wrong identity", opts: CosignOptions{CertificateIdentity: "someone@else", CertificateOIDCIssuer: iss}, reason: ReasonWrongIdentity},
		{name: "regexp is anchored", opts: CosignOptions{CertificateIdentityRegexp: `acme`, CertificateOIDCIssuer: iss}, reason: ReasonWrongIdentity},
		{name: "wrong issuer", opts: CosignOptions{CertificateIdentity: id, CertificateOIDCIssuer: "https://accounts.google.com"}, reason: ReasonWrongIssuer},
		{name: "another root and log", opts: CosignOptions{CertificateIdentity: id, CertificateOIDCIssuer: iss}, other: true, reason: ReasonNotInLog},
		{name: "no issuer asked", opts: CosignOptions{CertificateIdentity: id}, reason: ReasonInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &verification{opts: VerifyOptions{Reference: ref, Digest: d, Cosign: &tt.opts}, provider: ProviderCosign}
			tm := vs
			if tt.other {
				tm = other
			}
			proof, err := v.verifyKeyless(entity, tm, want)
			if tt.reason != "" {
				var e *Error
				if !errors.As(err, &e) || e.Reason != tt.reason {
					t.Fatalf("got %v, want reason %s", err, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if proof.Signer != id || proof.Issuer != iss || proof.LogIndex == nil {
				t.Fatalf("proof %+v", proof)
			}
		})
	}
}
