package hostile_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestWorkersHeldForGood (H2): one namespace has eight Releases whose wait never ends, with
// spec.timeout 8760h, and four whose cluster answers /version and then holds every request,
// acting there as a ServiceAccount named proxy. The controller runs with four workers and
// --max-timeout 30s. Another namespace's new Release becomes Ready while they hold their workers
// (the namespace holds at most three of the four); the held ones say what held them: the
// cluster's host, timed out within the Release's timeout, and the Deployment that never became
// ready once the maximum was up, with TimeoutCapped saying the maximum applies.
func TestWorkersHeldForGood(t *testing.T) {
	hostile, other := testenv.New(t), testenv.New(t)
	c := releasetest.Client(t, hostile)
	releasetest.Deployer(t, hostile, "deployer")
	releasetest.Deployer(t, other, "deployer")
	workersDefaultReadsSecrets(t, hostile)
	held := workersHoldingCluster(t)
	workersKubeconfigSecret(t, hostile, "held-kubeconfig", held)
	charts := releasetest.ServeCharts(t,
		berthtest.PackageNewChart(t, "never-ready", "0.1.0", map[string]string{"templates/deployment.yaml": neverReadyDeployment}),
		berthtest.PackageNewChart(t, "web", "0.1.0", map[string]string{
			"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: hello}\n",
		}))
	ctl := startController(t, hostile, "--max-timeout", "30s")

	var waiting, remote []string
	for i := range 4 {
		name := fmt.Sprintf("held-%d", i)
		remote = append(remote, name)
		workersCreate(t, c, ctl, hostile.Namespace, name, `
  serviceAccountName: proxy
  timeout: 20s
  kubeConfig: {secretRef: {name: held-kubeconfig}}
  chart: {repository: "`+charts+`", name: web, version: 0.1.0}`)
	}
	for i := range 8 {
		name := fmt.Sprintf("waits-%d", i)
		waiting = append(waiting, name)
		workersCreate(t, c, ctl, hostile.Namespace, name, `
  serviceAccountName: deployer
  timeout: 8760h
  chart: {repository: "`+charts+`", name: never-ready, version: 0.1.0}`)
	}

	// The hostile namespace holds all the workers it may have: three of four.
	workersWaitUntil(t, "the hostile namespace holds three workers", func(ctx context.Context) (bool, error) {
		n, err := workersHolding(ctx, c, hostile.Namespace, waiting)
		return n+int(held.Load()) >= 3, err
	})

	workersCreate(t, c, ctl, other.Namespace, "web", `
  serviceAccountName: deployer
  chart: {repository: "`+charts+`", name: web, version: 0.1.0}`)
	releasetest.WaitFor(t, c, other.Namespace, "web", "is Ready", func(rel *v1alpha1.Release) bool {
		cond := releasetest.Condition(rel, controller.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionTrue && rel.Status.Revision == 1
	})
	// It became Ready while the hostile namespace still held its workers: none of the waits has
	// ended, their maximum is not up.
	var list v1alpha1.ReleaseList
	if err := c.List(t.Context(), &list, client.InNamespace(hostile.Namespace)); err != nil {
		t.Fatal(err)
	}
	n, err := workersHolding(t.Context(), c, hostile.Namespace, waiting)
	if err != nil {
		t.Fatal(err)
	}
	if n+int(held.Load()) == 0 {
		t.Errorf("Release %s/web became Ready once the hostile namespace held no worker, want while it held them", other.Namespace)
	}
	for _, rel := range list.Items {
		if cond := releasetest.Condition(&rel, controller.ConditionReady); strings.HasPrefix(rel.Name, "waits-") && cond != nil && cond.Status == metav1.ConditionFalse {
			t.Errorf("Release %s ended its wait (%s: %s) before %s/web was Ready: web waited for a worker", rel.Name, cond.Reason, cond.Message, other.Namespace)
		}
	}

	// The held ones take their turns on the namespace's three workers. Each says, within its
	// timeout once it has a worker, which cluster held it and that it timed out; the waits run
	// with the maximum, say so, and end when it is up, naming what never became ready.
	host := workersHost(t, held.URL)
	workersWaitUntilWithin(t, 4*time.Minute, "every held Release says what held it, and a wait ended", func(ctx context.Context) (bool, error) {
		if err := c.List(ctx, &list, client.InNamespace(hostile.Namespace)); err != nil {
			return false, err
		}
		said, waitEnded := 0, false
		for _, rel := range list.Items {
			cond := releasetest.Condition(&rel, controller.ConditionReady)
			ended := cond != nil && cond.Status == metav1.ConditionFalse
			switch {
			case ended && strings.HasPrefix(rel.Name, "held-"):
				said++
			case ended && strings.HasPrefix(rel.Name, "waits-"):
				waitEnded = true
			}
		}
		return said == len(remote) && waitEnded, nil
	})
	capped := 0
	for _, rel := range list.Items {
		cond := releasetest.Condition(&rel, controller.ConditionReady)
		if strings.HasPrefix(rel.Name, "held-") && (cond.Reason != controller.ReasonClusterUnreachable || !strings.Contains(cond.Message, host) ||
			!strings.Contains(cond.Message, "did not answer within 20s") || !strings.Contains(cond.Message, "timed out")) {
			t.Errorf("Release %s: Ready %s (%s: %q), want False (%s) naming cluster %s, timed out within 20s",
				rel.Name, cond.Status, cond.Reason, cond.Message, controller.ReasonClusterUnreachable, host)
		}
		if !strings.HasPrefix(rel.Name, "waits-") || cond == nil {
			continue
		}
		if tc := releasetest.Condition(&rel, controller.ConditionTimeoutCapped); tc == nil || tc.Status != metav1.ConditionTrue || tc.Reason != controller.ReasonAboveMaximum ||
			!strings.Contains(tc.Message, "spec.timeout 8760h0m0s is over the controller's maximum of 30s") {
			t.Errorf("Release %s: TimeoutCapped %+v, want True (%s), naming 8760h and the maximum of 30s", rel.Name, tc, controller.ReasonAboveMaximum)
		}
		capped++
		if cond.Status == metav1.ConditionFalse {
			t.Logf("Release %s: Ready False, %s: %s", rel.Name, cond.Reason, cond.Message)
			if !strings.Contains(cond.Message, "timed out") || !strings.Contains(cond.Message, "not ready") {
				t.Errorf("Release %s: Ready False (%s: %q), want it timed out, saying what was not ready", rel.Name, cond.Reason, cond.Message)
			}
		}
	}
	if capped == 0 {
		t.Error("no wait says its timeout is capped")
	}
}

// neverReadyDeployment is a Deployment whose Pod the simulated kubelet starts in a year.
const neverReadyDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
      annotations: {devcluster.berth.dev/start: 8760h}
    spec:
      containers: [{name: app, image: example.test/never:1}]
`

// workersServer is a cluster's API server that answers /version and holds every other request
// until the test ends; Load is how many it holds now.
type workersServer struct {
	*httptest.Server
	holding atomic.Int64
}

func (s *workersServer) Load() int64 { return s.holding.Load() }

// workersHoldingCluster starts a workersServer over TLS.
func workersHoldingCluster(t *testing.T) *workersServer {
	t.Helper()
	stop := make(chan struct{})
	s := &workersServer{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
			return
		}
		s.holding.Add(1)
		defer s.holding.Add(-1)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(stop) }) // first: the handlers return, then the server closes
	return s
}

// workersKubeconfigSecret creates the Secret name of env's namespace with a kubeconfig of srv,
// which trusts srv's certificate.
func workersKubeconfigSecret(t *testing.T, env *testenv.Env, name string, srv *workersServer) {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kubeconfig := map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "held",
		"clusters": []any{map[string]any{"name": "held", "cluster": map[string]any{"server": srv.URL, "certificate-authority-data": ca}}},
		"users":    []any{map[string]any{"name": "held", "user": map[string]any{"token": "not-a-real-token"}}},
		"contexts": []any{map[string]any{"name": "held", "context": map[string]any{"cluster": "held", "user": "held"}}},
	}
	data, err := yaml.Marshal(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"value": data}}
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// workersDefaultReadsSecrets lets the default account of env's namespace read its Secrets: the
// account that reads a remote Release's kubeconfig.
func workersDefaultReadsSecrets(t *testing.T, env *testenv.Env) {
	t.Helper()
	ctx, rbac := t.Context(), env.Client.RbacV1()
	if _, err := rbac.Roles(env.Namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-secrets"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(env.Namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "read-secrets"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-secrets"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: env.Namespace}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// workersCreate creates the Release name of namespace ns with the spec given (YAML lines under
// spec:), labelled for ctl.
func workersCreate(t *testing.T, c client.Client, ctl *controllerProcess, ns, name, spec string) {
	t.Helper()
	if err := c.Create(t.Context(), ctl.release(ns, name, spec)); err != nil {
		t.Fatalf("create Release %s/%s: %v", ns, name, err)
	}
}

// workersHolding counts the Releases of names in namespace ns whose operation is under way.
func workersHolding(ctx context.Context, c client.Client, ns string, names []string) (int, error) {
	var list v1alpha1.ReleaseList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	n := 0
	for _, rel := range list.Items {
		for _, name := range names {
			if rel.Name == name && meta.IsStatusConditionTrue(rel.Status.Conditions, controller.ConditionReconciling) {
				n++
			}
		}
	}
	return n, nil
}

// workersWaitUntil waits, within releasetest.WaitTimeout, until cond is true.
func workersWaitUntil(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	workersWaitUntilWithin(t, releasetest.WaitTimeout, what, cond)
}

// workersWaitUntilWithin waits, within bound, until cond is true.
func workersWaitUntilWithin(t *testing.T, bound time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, bound, true, cond); err != nil {
		t.Fatalf("wait until %s: %v", what, err)
	}
}

// workersHost is the HOST:PORT of a server's URL.
func workersHost(t *testing.T, serverURL string) string {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
