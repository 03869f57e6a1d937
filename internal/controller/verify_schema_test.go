package controller_test

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/testenv"
)

// TestReleaseSchemaVerify: the CRD refuses a spec.chart.verify that mixes a cosign key and
// keyless fields, gives both forms of a pair, or says provider cosign without its block (or the
// block without the provider), naming what to set; it takes a keyring, a key and keyless, and
// keeps provider pgp as the default of a keyring.
func TestReleaseSchemaVerify(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	c := startClient(t, env)
	key := &v1alpha1.SecretKeyReference{Name: "cosign"}
	root := &v1alpha1.SecretKeyReference{Name: "sigstore"}
	tests := []struct {
		name    string
		verify  v1alpha1.KeyringReference
		refused string
	}{
		{name: "keyring", verify: v1alpha1.KeyringReference{Name: "keyring"}},
		{name: "key", verify: v1alpha1.KeyringReference{Provider: "cosign", Cosign: &v1alpha1.CosignVerification{Key: key}}},
		{name: "keyless", verify: v1alpha1.KeyringReference{Provider: "cosign", Cosign: &v1alpha1.CosignVerification{Identity: "ci", Issuer: "https://issuer", TrustedRoot: root}}},
		{name: "key and keyless", verify: v1alpha1.KeyringReference{Provider: "cosign", Cosign: &v1alpha1.CosignVerification{Key: key, Identity: "ci"}},
			refused: "set cosign.key, or the keyless identity, issuer and trustedRoot, not both"},
		{name: "identity both ways", verify: v1alpha1.KeyringReference{Provider: "cosign", Cosign: &v1alpha1.CosignVerification{Identity: "ci", IdentityRegexp: "c.*", Issuer: "https://issuer", TrustedRoot: root}},
			refused: "set one of cosign.identity and cosign.identityRegexp"},
		{name: "cosign without its block", verify: v1alpha1.KeyringReference{Provider: "cosign"}, refused: "provider cosign needs verify.cosign"},
		{name: "block without cosign", verify: v1alpha1.KeyringReference{Name: "keyring", Cosign: &v1alpha1.CosignVerification{Key: key}}, refused: "verify.cosign applies to provider cosign only"},
		{name: "notation without its block", verify: v1alpha1.KeyringReference{Provider: "notation"}, refused: "provider notation needs verify.notation"},
		{name: "an unknown provider", verify: v1alpha1.KeyringReference{Provider: "x509"}, refused: "Unsupported value"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rel := smallestRelease(t, env.Namespace, "oci://registry.example.test/charts", "deployer")
			rel.Name = fmt.Sprintf("web-%d", i)
			rel.Spec.Chart.Verify = &tc.verify
			err := c.Create(t.Context(), rel)
			switch {
			case tc.refused != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("create: %v, want it refused as invalid with %q", err, tc.refused)
			case tc.refused == "" && err != nil:
				t.Errorf("create: %v", err)
			case tc.name == "keyring" && rel.Spec.Chart.Verify.Provider != "pgp":
				t.Errorf("provider %q, want the default pgp", rel.Spec.Chart.Verify.Provider)
			}
		})
	}
}
