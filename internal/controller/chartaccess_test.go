package controller

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

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
	objects := fake.NewClientset(
		secret("basic", corev1.SecretTypeOpaque, map[string]string{"username": "tenant", "password": "s3cret"}),
		secret("no-password", corev1.SecretTypeOpaque, map[string]string{"username": "tenant"}),
		secret("docker", corev1.SecretTypeDockerConfigJson, map[string]string{corev1.DockerConfigJsonKey: dockerConfig}),
		secret("ca", corev1.SecretTypeOpaque, map[string]string{"ca.crt": string(ca.PEM)}),
		secret("client", corev1.SecretTypeTLS, map[string]string{"ca.crt": string(ca.PEM), "tls.crt": string(cert), "tls.key": string(key)}),
		secret("cert-alone", corev1.SecretTypeOpaque, map[string]string{"tls.crt": string(cert)}),
		secret("bad-key", corev1.SecretTypeOpaque, map[string]string{"tls.crt": string(cert), "tls.key": "s3cret-key-material"}),
	)
	r := keyReader{core: objects.CoreV1(), namespace: "team-a"}
	repo := chartRef{Ref: "web", RepoURL: "https://charts.example.test"}
	oci := chartRef{Ref: "oci://registry.example.test:5000/charts/web"}
	with := func(ref chartRef, creds, tls string) chartRef {
		ref.Credentials, ref.TLS = creds, tls
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
