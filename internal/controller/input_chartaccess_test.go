package controller

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/test/testca"
)

// TestReadChartAccess reads credentials and tls Secrets as the controller finds them: what they
// hold, or an error that names the Secret and the key and holds no secret value.
func TestReadChartAccess(t *testing.T) {
	ca := testca.New(t)
	cert, key := ca.ClientCert(t, "tenant")
	dockerConfig := fmt.Sprintf(`{"auths":{"registry.example.test:5000":{"auth":%q}}}`, base64.StdEncoding.EncodeToString([]byte("ci:s3cret")))
	secret := func(name string, typ corev1.SecretType, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"}, Type: typ, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	cosignPEM := publicKeyPEM(t)
	entity, err := openpgp.NewEntity("signer", "berth test key", "signer@berth.invalid", nil)
	if err != nil {
		t.Fatal(err)
	}
	var pubring bytes.Buffer
	if err := entity.Serialize(&pubring); err != nil {
		t.Fatal(err)
	}
	objects := fake.NewClientset(
		secret("basic", corev1.SecretTypeOpaque, map[string]string{"username": "tenant", "password": "s3cret"}),
		secret("no-password", corev1.SecretTypeOpaque, map[string]string{"username": "tenant"}),
		secret("docker", corev1.SecretTypeDockerConfigJson, map[string]string{corev1.DockerConfigJsonKey: dockerConfig}),
		secret("ca", corev1.SecretTypeOpaque, map[string]string{"ca.crt": string(ca.PEM)}),
		secret("client", corev1.SecretTypeTLS, map[string]string{"ca.crt": string(ca.PEM), "tls.crt": string(cert), "tls.key": string(key)}),
		secret("cert-alone", corev1.SecretTypeOpaque, map[string]string{"tls.crt": string(cert)}),
		secret("bad-key", corev1.SecretTypeOpaque, map[string]string{"tls.crt": string(cert), "tls.key": "s3cret-key-material"}),
		secret("keyring", corev1.SecretTypeOpaque, map[string]string{"pubring.gpg": pubring.String(), "trusted.gpg": pubring.String(), "junk.gpg": "s3cret-junk"}),
		secret("empty-keyring", corev1.SecretTypeOpaque, map[string]string{"pubring.gpg": ""}),
		secret("cosign", corev1.SecretTypeOpaque, map[string]string{"cosign.pub": string(cosignPEM), "junk.pub": "s3cret-junk"}),
		secret("sigstore", corev1.SecretTypeOpaque, map[string]string{"trusted_root.json": "{s3cret"}),
	)
	r := inputs.KeyReader{Core: objects.CoreV1(), Namespace: "team-a"}
	repo := chartRef{Ref: "web", RepoURL: "https://charts.example.test"}
	oci := chartRef{Ref: "oci://registry.example.test:5000/charts/web"}
	with := func(ref chartRef, creds, tls string) chartRef {
		ref.Credentials, ref.TLS = creds, tls
		return ref
	}
	cosign := func(c cosignRef) chartRef {
		ref := oci
		ref.Cosign = &c
		return ref
	}
	verify := func(ref chartRef, name, key string) chartRef {
		ref.Verify, ref.VerifyKey = name, key
		return ref
	}
	tests := []struct {
		name       string
		ref        chartRef
		want       chartAccess
		wantReason string
		// wantText are what the error's message must hold.
		wantText []string
	}{
		{name: "username and password", ref: with(repo, "basic", ""), want: chartAccess{Username: "tenant", Password: "s3cret"}},
		{name: "docker config", ref: with(oci, "docker", ""), want: chartAccess{Username: "ci", Password: "s3cret"}},
		{name: "ca", ref: with(repo, "", "ca"), want: chartAccess{TLS: source.TLSData{CA: ca.PEM}}},
		{name: "client certificate", ref: with(repo, "basic", "client"),
			want: chartAccess{Username: "tenant", Password: "s3cret", TLS: source.TLSData{CA: ca.PEM, Cert: cert, Key: key}}},
		{name: "no Secret", ref: with(repo, "nothing", ""), wantReason: ReasonCredentialsMissing,
			wantText: []string{"Secret/team-a/nothing not found", "spec.chart.credentials"}},
		{name: "no password", ref: with(repo, "no-password", ""), wantReason: ReasonCredentialsMissing,
			wantText: []string{"Secret/team-a/no-password has no key password"}},
		{name: "docker config of another registry", ref: with(chartRef{Ref: "oci://elsewhere.test/web"}, "docker", ""), wantReason: ReasonInvalidCredentials,
			wantText: []string{"Secret/team-a/docker key .dockerconfigjson", "elsewhere.test"}},
		{name: "no tls Secret", ref: with(repo, "", "nothing"), wantReason: ReasonCredentialsMissing,
			wantText: []string{"Secret/team-a/nothing not found (key ca.crt wanted)", "spec.chart.tls"}},
		{name: "certificate without key", ref: with(repo, "", "cert-alone"), wantReason: ReasonCredentialsMissing,
			wantText: []string{"Secret/team-a/cert-alone has no key tls.key"}},
		{name: "key that is none", ref: with(repo, "", "bad-key"), wantReason: ReasonInvalidCredentials,
			wantText: []string{"Secret/team-a/bad-key key tls.crt and tls.key"}},
		{name: "keyring", ref: verify(repo, "keyring", "pubring.gpg"), want: chartAccess{Keyring: pubring.Bytes()}},
		{name: "keyring of another key", ref: verify(oci, "keyring", "trusted.gpg"), want: chartAccess{Keyring: pubring.Bytes()}},
		{name: "keyring that is none", ref: verify(repo, "keyring", "junk.gpg"), wantReason: ReasonInvalidCredentials,
			wantText: []string{"Secret/team-a/keyring key junk.gpg (spec.chart.verify): holds no public keyring"}},
		{name: "no keyring Secret", ref: verify(repo, "nothing", "pubring.gpg"), wantReason: ReasonCredentialsMissing,
			wantText: []string{"Secret/team-a/nothing not found (key pubring.gpg wanted)", "spec.chart.verify"}},
		{name: "no keyring key", ref: verify(repo, "keyring", "missing.gpg"), wantReason: ReasonCredentialsMissing,
			wantText: []string{"Secret/team-a/keyring has no key missing.gpg", "spec.chart.verify"}},
		{name: "empty keyring", ref: verify(repo, "empty-keyring", "pubring.gpg"), wantReason: ReasonInvalidCredentials,
			wantText: []string{"Secret/team-a/empty-keyring key pubring.gpg (spec.chart.verify): holds no public keyring"}},
		{name: "cosign key", ref: cosign(cosignRef{Key: "cosign", KeyKey: "cosign.pub"}),
			want: chartAccess{Cosign: &provenance.CosignOptions{PublicKey: cosignPEM}}},
		{name: "cosign key that is none", ref: cosign(cosignRef{Key: "cosign", KeyKey: "junk.pub"}), wantReason: ReasonInvalidCredentials,
			wantText: []string{"Secret/team-a/cosign key junk.pub (spec.chart.verify.cosign.key): holds no PEM public key"}},
		{name: "no cosign key Secret", ref: cosign(cosignRef{Key: "nothing", KeyKey: "cosign.pub"}), wantReason: ReasonCredentialsMissing,
			wantText: []string{"Secret/team-a/nothing not found (key cosign.pub wanted)", "spec.chart.verify.cosign.key"}},
		{name: "trusted root that is none", ref: cosign(cosignRef{Identity: "ci", Issuer: "https://issuer", Root: "sigstore", RootKey: "trusted_root.json"}), wantReason: ReasonInvalidCredentials,
			wantText: []string{"Secret/team-a/sigstore key trusted_root.json (spec.chart.verify.cosign.trustedRoot): holds no Sigstore trusted root"}},
		{name: "no trusted root key", ref: cosign(cosignRef{Identity: "ci", Issuer: "https://issuer", Root: "sigstore", RootKey: "root.json"}), wantReason: ReasonCredentialsMissing,
			wantText: []string{"Secret/team-a/sigstore has no key root.json", "spec.chart.verify.cosign.trustedRoot"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readChartAccess(t.Context(), r, tt.ref)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("access (-want +got):\n%s", diff)
				}
				return
			}
			if reason := reasonOf(err, "none"); reason != tt.wantReason {
				t.Fatalf("got %v (reason %s), want reason %s", err, reason, tt.wantReason)
			}
			for _, text := range tt.wantText {
				if !strings.Contains(err.Error(), text) {
					t.Errorf("message %q does not hold %q", err, text)
				}
			}
			for _, secretValue := range []string{"s3cret", "PRIVATE KEY", "BEGIN CERTIFICATE"} {
				if strings.Contains(err.Error(), secretValue) {
					t.Errorf("message %q holds a secret value", err)
				}
			}
		})
	}
}

// TestAuthFailedNamesTheHostAndSecret: a refusal of the repository becomes a ChartAuthError
// that names the host and the credentials Secret.
func TestAuthFailedNamesTheHostAndSecret(t *testing.T) {
	refused := &source.Error{Ref: "web", Kind: source.KindUnauthorized,
		Err: &source.AuthError{Host: "charts.example.test:8443", URL: "https://charts.example.test:8443/index.yaml", Status: "401 Unauthorized", WithCredentials: true}}
	err := authFailed(refused, chartRef{Ref: "web", RepoURL: "https://charts.example.test:8443", Credentials: "repo-creds"}, "team-a")
	var authErr *ChartAuthError
	if !errors.As(err, &authErr) || authErr.Host != "charts.example.test:8443" || authErr.Secret != "Secret/team-a/repo-creds" {
		t.Fatalf("got %v, want a ChartAuthError naming the host and the Secret", err)
	}
	if reasonOf(err, "none") != ReasonAuthenticationFailed || !strings.Contains(err.Error(), "authentication to charts.example.test:8443 failed") {
		t.Errorf("got %v (reason %s)", err, reasonOf(err, "none"))
	}
	if other := errors.New("unreachable"); authFailed(other, chartRef{}, "team-a") != other {
		t.Error("an error other than a refusal changed")
	}
}

// TestVerificationFailedNamesTheChartKeyringAndWhy: a failed provenance check becomes a
// VerificationError that names the chart, the keyring's Secret and key, and what failed.
func TestVerificationFailedNamesTheChartKeyringAndWhy(t *testing.T) {
	ref := chartRef{Ref: "web", RepoURL: "https://charts.example.test", Version: "1.0.0", Verify: "keyring", VerifyKey: "pubring.gpg"}
	unverified := func(err error) error { return &source.Error{Ref: "web", Kind: source.KindUnverified, Err: err} }
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "no provenance file", err: unverified(&source.ProvenanceError{Missing: true, Err: errors.New(`failed to fetch provenance "https://charts.example.test/web-1.0.0.tgz.prov"`)}),
			want: "no provenance file (.prov)"},
		{name: "unknown key", err: unverified(&source.ProvenanceError{Chart: "web-1.0.0.tgz", Err: errors.New("openpgp: signature made by unknown entity")}),
			want: "signed by a key not in the keyring"},
		{name: "tampered", err: unverified(&source.ProvenanceError{Chart: "web-1.0.0.tgz", Err: errors.New(`sha256 sum does not match for web-1.0.0.tgz: "a" != "b"`)}),
			want: "the chart is not the one signed"},
		{name: "bad signature", err: unverified(&source.ProvenanceError{Chart: "web-1.0.0.tgz", Err: errors.New("openpgp: invalid signature: hash tag doesn't match")}),
			want: "signature invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verificationFailed(tt.err, ref, "team-a")
			var verifyErr *VerificationError
			if !errors.As(err, &verifyErr) || reasonOf(err, "none") != ReasonVerificationFailed {
				t.Fatalf("got %v, want a VerificationError", err)
			}
			for _, want := range []string{`chart web of https://charts.example.test version "1.0.0"`, "Secret/team-a/keyring key pubring.gpg", tt.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q does not hold %q", err, want)
				}
			}
		})
	}
	other := unverified(errors.New("boom"))
	if verificationFailed(other, chartRef{Ref: "web"}, "team-a") != other {
		t.Error("an error of a chart not verified changed")
	}
}

// publicKeyPEM is a new ECDSA P-256 public key, PEM-encoded as cosign.pub holds one.
func publicKeyPEM(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}
