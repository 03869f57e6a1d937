package provenance_test

import (
	"context"
	"errors"
	"testing"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/test/berthtest"
)

// TestNotationRegistry verifies signatures that notation-go pushed to a registry without the
// referrers API: they are found through the referrers tag schema, as `notation verify` finds them.
func TestNotationRegistry(t *testing.T) {
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	ca, other := berthtest.NewNotationCA(t, "berth"), berthtest.NewNotationCA(t, "other")
	trusted := []provenance.NotationCertificate{{Type: "ca", Store: "berth", Name: "root.crt", Data: ca.RootPEM()}}
	tests := []struct {
		name   string
		repo   string
		signer *berthtest.NotationCA
		reason provenance.Reason
	}{
		{name: "signed by the trusted CA", repo: "charts/trusted", signer: ca},
		{name: "signed by another CA", repo: "charts/other", signer: other, reason: provenance.ReasonUntrusted},
		{name: "not signed", repo: "charts/unsigned", reason: provenance.ReasonNoSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repoName := tt.repo
			dgst := digest.Digest(reg.PushArtifact(t, repoName, "1.0.0"))
			if tt.signer != nil {
				reg.NotationSign(t, repoName, "1.0.0", tt.signer)
			}
			repo, err := remote.NewRepository(reg.Host + "/" + repoName)
			if err != nil {
				t.Fatal(err)
			}
			repo.PlainHTTP = true
			ref := reg.Host + "/" + repoName + ":1.0.0"
			proof, err := provenance.Verify(context.Background(), provenance.VerifyOptions{Repository: repo, Reference: ref, Digest: dgst,
				Notation: &provenance.NotationOptions{
					TrustPolicy:  berthtest.NotationTrustPolicy(reg.Host+"/"+repoName, "berth", berthtest.NotationTrustedIdentity),
					Certificates: trusted,
				}})
			if tt.reason != "" {
				if !errors.Is(err, &provenance.Error{Reason: tt.reason}) {
					t.Fatalf("got %v, want reason %s", err, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if proof.Digest != dgst || proof.Signer != berthtest.NotationSubject.String() || proof.Provider != provenance.ProviderNotation {
				t.Fatalf("proof %+v", proof)
			}
		})
	}
}
