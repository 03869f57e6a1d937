package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/testenv"
)

// flagsFor parses args as berth's global flags and returns the cluster selection they make.
func flagsFor(t *testing.T, args ...string) kube.Flags {
	t.Helper()
	settings := newSettings(os.Getenv)
	root := newRootCommand(Streams{Out: &strings.Builder{}, ErrOut: &strings.Builder{}}, settings)
	if err := root.ParseFlags(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return kubeFlagsOf(settings, root)
}

func TestHelmSettingsSelectTheCluster(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want kube.Flags
	}{
		{
			name: "berth's rate limit by default",
			want: kube.Flags{QPS: kube.DefaultQPS, Burst: kube.DefaultBurst},
		},
		{
			name: "Helm's variables",
			env: map[string]string{
				"HELM_NAMESPACE": "team-a", "HELM_KUBECONTEXT": "prod", "HELM_KUBEAPISERVER": "https://api.example.test:6443",
				"HELM_KUBETOKEN": "t0k3n", "HELM_KUBEASUSER": "alice", "HELM_KUBEASGROUPS": "dev,ops",
				"HELM_KUBECAFILE": "/ca.pem", "HELM_KUBETLS_SERVER_NAME": "api", "HELM_KUBEINSECURE_SKIP_TLS_VERIFY": "true",
				"HELM_QPS": "20", "HELM_BURST_LIMIT": "40",
			},
			want: kube.Flags{
				Namespace: "team-a", Context: "prod", APIServer: "https://api.example.test:6443", Token: "t0k3n",
				AsUser: "alice", AsGroups: []string{"dev", "ops"}, CAFile: "/ca.pem", TLSServerName: "api",
				InsecureSkipTLSVerify: true, QPS: 20, Burst: 40,
			},
		},
		{
			name: "flags win over variables",
			env:  map[string]string{"HELM_NAMESPACE": "team-a", "HELM_KUBECONTEXT": "prod"},
			args: []string{
				"-n", "team-b", "--kube-context", "dev", "--kubeconfig", "/kc", "--kube-apiserver", "https://other:6443",
				"--kube-token", "x", "--kube-as-user", "bob", "--kube-as-group", "a", "--kube-as-group", "b",
				"--kube-ca-file", "/other.pem", "--kube-tls-server-name", "n", "--kube-insecure-skip-tls-verify",
				"--qps", "7", "--burst-limit", "-1",
			},
			want: kube.Flags{
				Namespace: "team-b", Context: "dev", Kubeconfig: "/kc", APIServer: "https://other:6443", Token: "x",
				AsUser: "bob", AsGroups: []string{"a", "b"}, CAFile: "/other.pem", TLSServerName: "n",
				InsecureSkipTLSVerify: true, QPS: 7, Burst: -1,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, name := range []string{"KUBECONFIG", "HELM_NAMESPACE", "HELM_KUBECONTEXT", "HELM_KUBEAPISERVER", "HELM_KUBETOKEN",
				"HELM_KUBEASUSER", "HELM_KUBEASGROUPS", "HELM_KUBECAFILE", "HELM_KUBETLS_SERVER_NAME",
				"HELM_KUBEINSECURE_SKIP_TLS_VERIFY", "HELM_QPS", "HELM_BURST_LIMIT"} {
				t.Setenv(name, tt.env[name])
			}
			if diff := cmp.Diff(tt.want, flagsFor(t, tt.args...)); diff != "" {
				t.Errorf("cluster selection (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKubeTokenAndImpersonation reaches the cluster with Helm's --kube-apiserver, --kube-ca-file
// and --kube-token and no kubeconfig, as a ServiceAccount allowed to read Secrets in one
// namespace; impersonating a user without that right is refused.
func TestKubeTokenAndImpersonation(t *testing.T) {
	env := testenv.New(t)
	ctx := t.Context()
	sa, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}},
		},
	}
	if _, err := env.Client.RbacV1().Roles(env.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: env.Namespace}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"},
	}
	if _, err := env.Client.RbacV1().RoleBindings(env.Namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := env.Config.CAFile
	empty := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	seedReleases(t, env, "tok")
	asReader := []string{"--kubeconfig", empty, "--kube-apiserver", env.Config.Host, "--kube-ca-file", ca,
		"--kube-token", token.Status.Token, "-n", env.Namespace}

	stdout, _, err := run(t, append([]string{"list", "-q"}, asReader...)...)
	if err != nil {
		t.Fatalf("berth list with --kube-token: %v", err)
	}
	if got, want := strings.Fields(stdout), []string{"db-tok", "gone-tok", "web-tok"}; !cmp.Equal(got, want) {
		t.Errorf("berth list -q = %q, want %q", got, want)
	}

	if _, _, err := run(t, append([]string{"list", "-q", "--kube-as-user", "nobody"}, asReader...)...); err == nil {
		t.Error("berth list as a user with no rights succeeded")
	}
	if _, _, err := run(t, append([]string{"list", "-q", "-A"}, asReader...)...); err == nil {
		t.Error("berth list -A as an account that may read one namespace succeeded")
	}
}
