package lifecycle

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// unchangedChart has objects the API server fills in (a Deployment, a Service), a Secret written
// with stringData and a ConfigMap with a value.
var unchangedChart = map[string]string{
	"values.yaml": "greeting: hello\n",
	"templates/objects.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data:
  greeting: {{ .Values.greeting | quote }}
  static: "x"
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: hunter2}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: web}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: web
      containers: [{name: web, image: example.invalid/web}]
`,
}

// unchangedObjects are the chart's objects, by the path of their requests below the namespace.
var unchangedObjects = []string{"configmaps/settings", "secrets/creds", "serviceaccounts/web", "services/web", "deployments/web"}

// TestUpgradeWritesOnlyWhatChanges upgrades a release through a proxy that records every request
// berth makes. An upgrade with the same chart and values writes none of the release's objects:
// every object is unchanged, with its resourceVersion, and the only writes are the release's
// records and berth's lease and journal. An upgrade that changes one value writes that object
// alone, and so does an upgrade with the same values after the object was edited by hand, which
// puts the chart's value back. With --take-ownership, every object is written, and so it is when
// berth first upgrades a release Helm installed (it adopts Helm's fields), though not after.
func TestUpgradeWritesOnlyWhatChanges(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "unchanged", unchangedChart)
	berthtest.MustBerth(t, env, "install", "web", chart, "--wait")
	proxy := newRecordingProxy(t, env)

	t.Log("an upgrade with the same chart and values")
	versions := resourceVersions(t, env)
	writes, summary := proxy.upgrade(t, env, "web", chart)
	if len(writes) != 0 {
		t.Errorf("writes to the release's objects: %v, want none", writes)
	}
	if want := "done: 5 unchanged in"; !strings.Contains(summary, want) {
		t.Errorf("summary %q, want %q", summary, want)
	}
	if got := resourceVersions(t, env); !maps.Equal(got, versions) {
		t.Errorf("resourceVersions changed from %v to %v", versions, got)
	}

	t.Log("an upgrade that changes one value")
	writes, summary = proxy.upgrade(t, env, "web", chart, "--set", "greeting=bye")
	if want := []string{"PATCH configmaps/settings"}; !slices.Equal(writes, want) {
		t.Errorf("writes to the release's objects: %v, want %v", writes, want)
	}
	if want := "done: 1 configured, 4 unchanged in"; !strings.Contains(summary, want) {
		t.Errorf("summary %q, want %q", summary, want)
	}
	if got := greeting(t, env); got != "bye" {
		t.Errorf("greeting %q after the upgrade, want bye", got)
	}

	t.Log("an upgrade with the same values after an edit by hand")
	cms := env.Resource(t, "v1", "ConfigMap")
	cm, err := cms.Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Object["data"].(map[string]any)["greeting"] = "edited"
	if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	writes, summary = proxy.upgrade(t, env, "web", chart, "--set", "greeting=bye")
	if want := []string{"PATCH configmaps/settings"}; !slices.Equal(writes, want) {
		t.Errorf("writes to the release's objects: %v, want %v", writes, want)
	}
	if want := "done: 1 configured, 4 unchanged in"; !strings.Contains(summary, want) {
		t.Errorf("summary %q, want %q", summary, want)
	}
	if got := greeting(t, env); got != "bye" {
		t.Errorf("greeting %q after the upgrade, want the chart's bye back", got)
	}

	t.Log("an upgrade with the same values and --take-ownership")
	writes, _ = proxy.upgrade(t, env, "web", chart, "--set", "greeting=bye", "--take-ownership")
	assertAllWritten(t, writes)

	t.Log("berth's first upgrade of a release Helm installed, with the same chart and values")
	other := testenv.New(t)
	berthtest.MustHelm(t, other, "install", "web", chart, "--wait")
	writes, _ = proxy.upgrade(t, other, "web", chart)
	assertAllWritten(t, writes)
	writes, _ = proxy.upgrade(t, other, "web", chart)
	if len(writes) != 0 {
		t.Errorf("writes to the release's objects once berth upgraded it: %v, want none", writes)
	}
}

// assertAllWritten checks that writes applied every object of the chart.
func assertAllWritten(t *testing.T, writes []string) {
	t.Helper()
	for _, obj := range unchangedObjects {
		if !slices.Contains(writes, "PATCH "+obj) {
			t.Errorf("writes to the release's objects: %v, want %s applied", writes, obj)
		}
	}
}

func greeting(t *testing.T, env *testenv.Env) string {
	t.Helper()
	cm, err := env.Resource(t, "v1", "ConfigMap").Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Object["data"].(map[string]any)["greeting"].(string)
}

// resourceVersions returns the resourceVersion of each of the chart's objects.
func resourceVersions(t *testing.T, env *testenv.Env) map[string]string {
	t.Helper()
	kinds := map[string][2]string{
		"configmaps": {"v1", "ConfigMap"}, "secrets": {"v1", "Secret"}, "serviceaccounts": {"v1", "ServiceAccount"},
		"services": {"v1", "Service"}, "deployments": {"apps/v1", "Deployment"},
	}
	out := map[string]string{}
	for _, obj := range unchangedObjects {
		resource, name, _ := strings.Cut(obj, "/")
		k := kinds[resource]
		live, err := env.Resource(t, k[0], k[1]).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[obj] = live.GetResourceVersion()
	}
	return out
}

// recordingProxy forwards plain HTTP requests to the test's API server with the test's
// credentials and records each one.
type recordingProxy struct {
	kubeconfig string
	mu         sync.Mutex
	requests   []*http.Request
}

func newRecordingProxy(t *testing.T, env *testenv.Env) *recordingProxy {
	t.Helper()
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	rp.FlushInterval = -1 // watches stream
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, r.Clone(r.Context()))
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	p.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return p
}

// objectPath matches a request on a named object of a namespace, or on one of its subresources.
var objectPath = regexp.MustCompile(`/namespaces/[^/]+/([^/]+/[^/]+)`)

// bookkeeping matches the objects berth writes beside the release's own, below the namespace: its
// records, its lease and its journal (each created in its collection).
var bookkeeping = regexp.MustCompile(`^(secrets$|leases$|secrets/sh\.helm\.release\.v1\.|leases/|secrets/berth\.journal\.)`)

// upgrade runs berth upgrade through the proxy and returns the writes made to the chart's
// objects (method and object, in order) and berth's summary line. It logs what berth asked.
func (p *recordingProxy) upgrade(t *testing.T, env *testenv.Env, args ...string) (writes []string, summary string) {
	t.Helper()
	p.mu.Lock()
	p.requests = nil
	p.mu.Unlock()
	args = append([]string{"upgrade"}, args...)
	_, stderr, err := berthtest.RunBerth(t, append(args, "--kubeconfig", p.kubeconfig, "-n", env.Namespace)...)
	if err != nil {
		t.Fatalf("berth %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	for line := range strings.SplitSeq(stderr, "\n") {
		if strings.HasPrefix(line, "done: ") {
			summary = line
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	counts := map[string]int{}
	var others []string
	for _, r := range p.requests {
		dryRun := r.URL.Query().Get("dryRun") != ""
		write := r.Method != http.MethodGet && !dryRun
		switch {
		case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
			counts["watch"]++
		case r.Method == http.MethodGet:
			counts["read"]++
		case dryRun:
			counts["dry run"]++
		default:
			counts["write"]++
		}
		m := objectPath.FindStringSubmatch(r.URL.Path)
		if !write {
			continue
		}
		if m != nil && slices.Contains(unchangedObjects, m[1]) {
			writes = append(writes, r.Method+" "+m[1])
			continue
		}
		others = append(others, r.Method+" "+r.URL.Path)
		if _, below, _ := strings.Cut(r.URL.Path, "/namespaces/"+env.Namespace+"/"); !bookkeeping.MatchString(below) {
			t.Errorf("berth %s wrote %s %s, neither an object of the release nor its record, lease or journal", strings.Join(args, " "), r.Method, r.URL.Path)
		}
	}
	t.Logf("%d requests: %v; writes to the release's objects: %v; other writes: %v", len(p.requests), counts, writes, others)
	return writes, summary
}
