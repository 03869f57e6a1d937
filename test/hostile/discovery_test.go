package hostile_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/kube/kubetest"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/releasetest"
)

// discoveryServer pretends to be an API server whose discovery lists groups group versions, in
// aggregated discovery when asked for it and aggregated is set, else in the legacy form; it
// counts the requests of a group version's resources. What else it is asked (the release's
// record) is answered as an empty cluster would.
type discoveryServer struct {
	groups     int
	aggregated bool
	asked      atomic.Int64
}

func (s *discoveryServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	aggregated := s.aggregated && strings.Contains(r.Header.Get("Accept"), "as=APIGroupDiscoveryList")
	json := func(ctype, body string) {
		w.Header().Set("Content-Type", ctype)
		io.WriteString(w, body)
	}
	const aggregatedType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	switch p := r.URL.Path; {
	case p == "/version":
		json("application/json", `{"major":"1","minor":"31","gitVersion":"v1.31.0"}`)
	case p == "/api" && aggregated:
		json(aggregatedType, `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":[]}`)
	case p == "/api":
		json("application/json", `{"kind":"APIVersions","versions":["v1"]}`)
	case p == "/apis":
		kubetest.WriteGroups(w, s.groups, aggregated)
	case strings.HasPrefix(p, "/apis/"):
		s.asked.Add(1)
		json("application/json", fmt.Sprintf(`{"kind":"APIResourceList","groupVersion":%q,"resources":[]}`, strings.TrimPrefix(p, "/apis/")))
	case p == "/api/v1":
		json("application/json", `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"secrets","namespaced":true,"kind":"Secret","verbs":["get","list"]}]}`)
	case strings.HasSuffix(p, "/secrets") && r.Method == http.MethodGet:
		json("application/json", `{"kind":"SecretList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
	}
}

// TestDiscoveryOfRemoteClusterBounded gives two Releases the kubeconfigs of HTTPS servers a
// tenant runs, which answer /version as an API server does: one lists 5,000 API group versions
// in the legacy discovery, the other 50,000 in aggregated discovery (some 11 MB). Each Release
// is ClusterDiscoveryTooLarge, naming the host, what it served and the limit; no group version
// is asked; the controller grows by at most 64 MiB and another namespace's Release is Ready as
// if nothing happened.
func TestDiscoveryOfRemoteClusterBounded(t *testing.T) {
	env := testenv.New(t)
	reachSetup(t, env)
	legacy, aggregated := &discoveryServer{groups: 5_000}, &discoveryServer{groups: 50_000, aggregated: true}
	servers := map[string]*httptest.Server{}
	for name, s := range map[string]*discoveryServer{"legacy": legacy, "aggregated": aggregated} {
		srv := httptest.NewTLSServer(s)
		defer srv.Close()
		servers[name] = srv
	}
	p := startController(t, env)
	q := p.quiet(t, env)

	for name, srv := range servers {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"value": reachKubeconfig(srv.URL, reachCA(srv))}}
		if _, err := env.Client.CoreV1().Secrets(env.Namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rel := p.release(env.Namespace, name, `
  chart: {repository: "`+q.repo+`", name: bystander, version: "0.1.0"}
  kubeConfig: {secretRef: {name: `+name+`}}
  timeout: 30s`)
		if err := releasetest.Client(t, env).Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	q.bystander(t)

	served := map[string][]string{
		"legacy":     {"5001 API group versions", fmt.Sprintf("more than %d", kube.MaxDiscoveryGroupVersions)},
		"aggregated": {fmt.Sprintf("longer than %d MiB", kube.MaxDiscoveryBytes>>20)},
	}
	for name, srv := range servers {
		_, msg := readyFalse(t, env, name, controller.ReasonClusterDiscoveryTooLarge)
		host := strings.TrimPrefix(srv.URL, "https://")
		for _, want := range append(served[name], host, "Secret "+env.Namespace+"/"+name) {
			if !strings.Contains(msg, want) {
				t.Errorf("Release %s: Ready message %q does not say %q", name, msg, want)
			}
		}
	}
	if n := legacy.asked.Load() + aggregated.asked.Load(); n > 0 {
		t.Errorf("the controller asked %d group versions of servers that list too many", n)
	}
}
