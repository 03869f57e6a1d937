package hostile_test

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/releasetest"
)

// reachKubeconfig is a kubeconfig of server, with the cluster's extra fields (a YAML flow
// mapping's entries, each followed by a comma) and a token.
func reachKubeconfig(server, extra string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {%s server: "%s"}
users:
- name: u
  user: {token: reach-token}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`, extra, server))
}

// reachCA is the certificate-authority-data entry that trusts server's certificate.
func reachCA(server *httptest.Server) string {
	return "certificate-authority-data: " + base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})) + ","
}

// reachSetup installs the Release CRD and waits until it is served, before any controller
// starts, and lets the default account of env's namespace read its Secrets: it reads a remote
// Release's kubeconfig.
func reachSetup(t *testing.T, env *testenv.Env) {
	t.Helper()
	releasetest.Client(t, env)
	ctx, rbac := t.Context(), env.Client.RbacV1()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reach-read-secrets"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}
	if _, err := rbac.Roles(env.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := rbac.RoleBindings(env.Namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reach-read-secrets"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reach-read-secrets"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: env.Namespace}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// reachRelease creates the Secret name holding kubeconfig and a Release name of p's label
// releasing into its cluster. The chart is never fetched: the cluster is checked first.
func reachRelease(t *testing.T, env *testenv.Env, p *controllerProcess, name string, kubeconfig []byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"value": kubeconfig}}
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rel := p.release(env.Namespace, name, `
  chart: {repository: "https://charts.example.test", name: web, version: "0.1.0"}
  kubeConfig: {secretRef: {name: `+name+`}}
  timeout: 20s`)
	if err := releasetest.Client(t, env).Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
}

// readyFalse waits until the Release name is Ready=False with reason, and returns its Ready
// condition's message.
func readyFalse(t *testing.T, env *testenv.Env, name, reason string) (*v1alpha1.Release, string) {
	t.Helper()
	rel := releasetest.WaitFor(t, releasetest.Client(t, env), env.Namespace, name, "is Ready=False, "+reason, func(rel *v1alpha1.Release) bool {
		c := releasetest.Condition(rel, controller.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason
	})
	return rel, releasetest.Condition(rel, controller.ConditionReady).Message
}

// TestReachKubeconfigRefusedByName gives a controller started without any flag of reach three
// kubeconfigs: one that skips TLS verification, one with a proxy, one with a plain HTTP server.
// Each Release is InvalidKubeConfig, naming the field and the flag that would allow it, and no
// request reaches the servers they name.
func TestReachKubeconfigRefusedByName(t *testing.T) {
	env := testenv.New(t)
	reachSetup(t, env)
	reached := make(chan string, 16)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case reached <- r.URL.String():
		default:
		}
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer target.Close()
	p := startController(t, env)
	https := strings.Replace(target.URL, "http://", "https://", 1)
	cases := []struct{ name, kubeconfig, field, flag string }{
		{"insecure", string(reachKubeconfig(https, "insecure-skip-tls-verify: true,")), "clusters[c].cluster.insecure-skip-tls-verify", "--allow-kubeconfig-insecure-tls"},
		{"proxy", string(reachKubeconfig(https, "proxy-url: "+target.URL+",")), "clusters[c].cluster.proxy-url", "--allow-kubeconfig-proxy"},
		{"plain", string(reachKubeconfig(target.URL, "")), "clusters[c].cluster.server", "--allow-kubeconfig-http"},
	}
	for _, c := range cases {
		reachRelease(t, env, p, c.name, []byte(c.kubeconfig))
	}
	for _, c := range cases {
		_, msg := readyFalse(t, env, c.name, controller.ReasonInvalidKubeConfig)
		if !strings.Contains(msg, c.field) || !strings.Contains(msg, c.flag) {
			t.Errorf("%s: Ready message %q, want it to name %s and %s", c.name, msg, c.field, c.flag)
		}
		if strings.Contains(msg, "reach-token") {
			t.Errorf("%s: Ready message %q quotes the kubeconfig's token", c.name, msg)
		}
	}
	select {
	case u := <-reached:
		t.Errorf("the controller reached %s through a refused kubeconfig", u)
	default:
	}
}

// TestReachKubeconfigHTTPAllowedByFlag starts the controller with --allow-kubeconfig-http: a
// kubeconfig whose server is http:// gets past the kubeconfig's check to its server, whose
// failure the Release names by host and code.
func TestReachKubeconfigHTTPAllowedByFlag(t *testing.T) {
	env := testenv.New(t)
	reachSetup(t, env)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer target.Close()
	p := startController(t, env, "--allow-kubeconfig-http")
	reachRelease(t, env, p, "plain", reachKubeconfig(target.URL, ""))
	_, msg := readyFalse(t, env, "plain", controller.ReasonClusterUnreachable)
	host := strings.TrimPrefix(target.URL, "http://")
	if !strings.Contains(msg, host) || !strings.Contains(msg, "503") {
		t.Errorf("Ready message %q, want it to name %s and 503", msg, host)
	}
}

// TestReachAnswersBoundedAndKeptOut gives Releases the kubeconfigs of two HTTPS servers a tenant
// runs: one answers /version with 256 MiB, streamed; the other answers everything with a 500
// whose body carries a marker. The first Release is ClusterAnswerTooLarge, naming the host and
// the limit, with the controller within its memory limit (startController); nothing of the
// second's answer is in its status or any Event, only the host and the code.
func TestReachAnswersBoundedAndKeptOut(t *testing.T) {
	env := testenv.New(t)
	reachSetup(t, env)
	huge := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"major":"1","minor":"31","gitVersion":"`)
		chunk := []byte(strings.Repeat("v", 64<<10))
		for range (256 << 20) / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		io.WriteString(w, `"}`)
	}))
	defer huge.Close()
	const marker = "REACH-MARKER-7d2e"
	failing := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "internal detail "+marker+" of the server", http.StatusInternalServerError)
	}))
	defer failing.Close()
	p := startController(t, env)
	reachRelease(t, env, p, "huge", reachKubeconfig(huge.URL, reachCA(huge)))
	reachRelease(t, env, p, "failing", reachKubeconfig(failing.URL, reachCA(failing)))

	_, msg := readyFalse(t, env, "huge", controller.ReasonClusterAnswerTooLarge)
	if host := strings.TrimPrefix(huge.URL, "https://"); !strings.Contains(msg, host) || !strings.Contains(msg, "64 KiB") {
		t.Errorf("Ready message %q, want it to name %s and the limit, 64 KiB", msg, host)
	}

	rel, msg := readyFalse(t, env, "failing", controller.ReasonClusterUnreachable)
	if host := strings.TrimPrefix(failing.URL, "https://"); !strings.Contains(msg, host) || !strings.Contains(msg, "500") {
		t.Errorf("Ready message %q, want it to name %s and 500", msg, host)
	}
	status, err := json.Marshal(rel.Status)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(status), marker) {
		t.Errorf("the server's answer is in the Release's status: %s", status)
	}
	// The Warning Event that says the cluster failed names its host, and nothing of its answer.
	events := eventsOnceNamed(t, env, env.Namespace, "failing", strings.TrimPrefix(failing.URL, "https://"))
	if strings.Contains(events, marker) {
		t.Errorf("an Event quotes the server's answer:\n%s", events)
	}
	if strings.Contains(p.Output(), marker) {
		t.Errorf("the controller logged the server's answer")
	}
}
