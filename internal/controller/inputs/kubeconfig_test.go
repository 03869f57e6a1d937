package inputs

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/internal/yamlbound"
)

// parseKubeConfig is ReadKubeConfig allowing nothing of KubeConfigReach.
func parseKubeConfig(data []byte, ns, secret, key string) (*rest.Config, error) {
	return ReadKubeConfig(data, ns, secret, key, KubeConfigReach{})
}

// kubeconfigWith is a kubeconfig of the server https://workload.example.test:6443 whose cluster
// and user have the fields given (YAML lines, indented as their entries' fields).
func kubeconfigWith(cluster, user string) string {
	return `apiVersion: v1
kind: Config
clusters:
- name: workload
  cluster:
    server: https://workload.example.test:6443
` + cluster + `
users:
- name: admin
  user:
` + user + `
contexts:
- name: workload
  context: {cluster: workload, user: admin}
current-context: workload
`
}

func TestParseKubeConfigRefusesCommandsAndFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, cluster, user string
		field               string // "" when the kubeconfig is accepted
	}{
		{name: "token", user: "    token: abc"},
		{name: "embedded certificates", cluster: "    certificate-authority-data: " + b64("ca"),
			user: "    client-certificate-data: " + b64("cert") + "\n    client-key-data: " + b64("key")},
		{name: "exec plugin", user: "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, id]}",
			field: "users[admin].user.exec"},
		{name: "auth provider", user: "    auth-provider: {name: oidc, config: {idp-issuer-url: https://issuer.example.test}}",
			field: "users[admin].user.auth-provider"},
		{name: "token file", user: "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token",
			field: "users[admin].user.tokenFile"},
		{name: "client certificate file", user: "    client-certificate: /etc/passwd\n    client-key-data: " + b64("key"),
			field: "users[admin].user.client-certificate"},
		{name: "client key file", user: "    client-certificate-data: " + b64("cert") + "\n    client-key: /etc/shadow",
			field: "users[admin].user.client-key"},
		{name: "certificate authority file", cluster: "    certificate-authority: /etc/ssl/certs/ca.pem", user: "    token: abc",
			field: "clusters[workload].cluster.certificate-authority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := parseKubeConfig([]byte(kubeconfigWith(tt.cluster, tt.user)), "team-a", "workload-kubeconfig", "value")
			if tt.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if cfg.Host != "https://workload.example.test:6443" || cfg.ExecProvider != nil || cfg.AuthProvider != nil {
					t.Errorf("config host %q exec %v auth provider %v", cfg.Host, cfg.ExecProvider, cfg.AuthProvider)
				}
				return
			}
			var kc *KubeConfigError
			if !errors.As(err, &kc) {
				t.Fatalf("error %v, want a *KubeConfigError", err)
			}
			if kc.Field != tt.field || !strings.Contains(err.Error(), tt.field) || !strings.Contains(err.Error(), "Secret/team-a/workload-kubeconfig key value") {
				t.Errorf("error %q (field %q), want it to name the Secret and field %s", err, kc.Field, tt.field)
			}
		})
	}
}

func TestParseKubeConfigNamesWhatIsWrong(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, data, want string }{
		{"not a kubeconfig", "{{{", "not a kubeconfig"},
		{"no current context", strings.Replace(kubeconfigWith("", "    token: abc"), "current-context: workload", "", 1), "current-context"},
		{"context of nothing", strings.Replace(kubeconfigWith("", "    token: abc"), "current-context: workload", "current-context: elsewhere", 1), "elsewhere"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseKubeConfig([]byte(tt.data), "team-a", "kc", "value")
			var kc *KubeConfigError
			if !errors.As(err, &kc) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want a *KubeConfigError that says %q", err, tt.want)
			}
		})
	}
}

func TestParseKubeConfigQuotesNothingOfIt(t *testing.T) {
	t.Parallel()
	// The parser's own messages quote the first two.
	for _, data := range []string{"{{s3cret: 1}: 2}\n", "users: [{name: a, user: {token: *s3cret}}]\n", "users: [{name: a, user: {token: s3cret}}\n"} {
		_, err := parseKubeConfig([]byte(data), "team-a", "kc", "value")
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error %v, want one that quotes nothing of the kubeconfig", err)
		}
	}
}

func TestParseKubeConfigRefusesAnAliasBomb(t *testing.T) {
	t.Parallel()
	// Under maxKubeConfig as written; 12 MiB of tokens once the loader expands the aliases.
	token := strings.Repeat("s3cret", 400<<10/6)
	data := "users:\n- name: a\n  user: {token: &t " + token + "}\n" + strings.Repeat("- {name: b, user: {token: *t}}\n", 30)
	_, err := parseKubeConfig([]byte(data), "team-a", "kc", "value")
	var kc *KubeConfigError
	var exp *yamlbound.ExpansionError
	if !errors.As(err, &kc) || !errors.As(err, &exp) {
		t.Fatalf("error %v, want a *KubeConfigError of a *yamlbound.ExpansionError", err)
	}
	for _, want := range []string{"Secret/team-a/kc key value", fmt.Sprint(yamlbound.Tenant.Bytes)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q quotes the kubeconfig", err)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
