package controller

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/controller/api/v1alpha1"
	"github.com/berthdev/berth/internal/kube"
)

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
			if reasonOf(err, "") != ReasonInvalidKubeConfig {
				t.Errorf("reason %q, want %s", reasonOf(err, ""), ReasonInvalidKubeConfig)
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

func TestWithRemote(t *testing.T) {
	t.Parallel()
	d := &desired{Namespace: "team-a", ServiceAccount: "deployer"}
	withRemote(d, v1alpha1.ReleaseSpec{ServiceAccountName: "deployer",
		KubeConfig: &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.KubeConfigSecretReference{Name: "workload-kubeconfig"}}})
	want := remoteRef{Secret: "workload-kubeconfig", Key: "value", Account: "deployer"}
	if d.Remote == nil || *d.Remote != want || d.ServiceAccount != "" {
		t.Errorf("remote %+v, local account %q; want %+v, and the local account defaulted", d.Remote, d.ServiceAccount, want)
	}
	local := &desired{Namespace: "team-a", ServiceAccount: "deployer"}
	withRemote(local, v1alpha1.ReleaseSpec{ServiceAccountName: "deployer"})
	if local.Remote != nil || local.ServiceAccount != "deployer" {
		t.Errorf("without kubeConfig: remote %+v, account %q", local.Remote, local.ServiceAccount)
	}
}

func TestClusterErrorNamesTheHostOnly(t *testing.T) {
	t.Parallel()
	host := hostOf("https://admin:s3cret@workload.example.test:6443/prefix")
	if host != "workload.example.test:6443" {
		t.Errorf("host %q, want workload.example.test:6443", host)
	}
	e := &ClusterError{Host: host, Secret: "team-a/kc", Timeout: time.Minute, Reason: ReasonClusterUnreachable,
		Err: errors.New("connect: connection refused")}
	if msg := e.Error(); strings.Contains(msg, "s3cret") || !strings.Contains(msg, "cluster workload.example.test:6443") || !strings.Contains(msg, "1m0s") {
		t.Errorf("message %q, want the host and timeout and no credentials", msg)
	}
}

func TestRemoteCacheDropsWhatASecretHeldBefore(t *testing.T) {
	t.Parallel()
	var c remoteCache
	builds := 0
	build := func() (*kube.Clients, error) { builds++; return &kube.Clients{}, nil }
	secret := types.NamespacedName{Namespace: "team-a", Name: "kc"}
	v1 := remoteKey{Secret: secret, Version: "1", Key: "value"}
	first, _ := c.get(v1, build)
	again, _ := c.get(v1, build)
	if first != again || builds != 1 {
		t.Errorf("the same kubeconfig built %d times, want once and its clients reused", builds)
	}
	as := v1
	as.Account = "deployer"
	if _, err := c.get(as, build); err != nil || builds != 2 || c.len() != 2 {
		t.Errorf("another account: %d builds, %d kept, want 2 and 2", builds, c.len())
	}
	v2 := remoteKey{Secret: secret, Version: "2", Key: "value"}
	if _, err := c.get(v2, build); err != nil || c.len() != 1 {
		t.Errorf("after the Secret changed, %d clients kept, want only the new one", c.len())
	}
	if _, err := c.get(v2, func() (*kube.Clients, error) { return nil, errors.New("refused") }); err != nil {
		t.Errorf("kept clients were built again: %v", err)
	}
}

func TestRemoteCacheIsBounded(t *testing.T) {
	t.Parallel()
	var c remoteCache
	build := func() (*kube.Clients, error) { return &kube.Clients{}, nil }
	key := func(i int) remoteKey {
		return remoteKey{Secret: types.NamespacedName{Namespace: "ns", Name: string(rune('a'+i%26)) + strings.Repeat("x", i/26)}, Version: "1"}
	}
	for i := range maxRemoteClients + 10 {
		if _, err := c.get(key(i), build); err != nil {
			t.Fatal(err)
		}
		c.get(key(0), build) // the first is used all along
	}
	if c.len() != maxRemoteClients {
		t.Errorf("%d clients kept, want %d", c.len(), maxRemoteClients)
	}
	built := false
	c.get(key(0), func() (*kube.Clients, error) { built = true; return &kube.Clients{}, nil })
	if built {
		t.Error("the most used clients were evicted")
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
