package lifecycle_test

import (
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

var stagedChart = map[string]string{
	"templates/objects.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 1
  selector: {matchLabels: {app: staged}}
  template:
    metadata: {labels: {app: staged}}
    spec:
      serviceAccountName: app
      containers: [{name: app, image: example.invalid/app, envFrom: [{configMapRef: {name: settings}}, {secretRef: {name: token}}]}]
---
apiVersion: v1
kind: Service
metadata: {name: app}
spec: {selector: {app: staged}, ports: [{port: 80}]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: app}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: app}
subjects: [{kind: ServiceAccount, name: app}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: app}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: v1
kind: Secret
metadata: {name: token}
stringData: {token: t}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: hello}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: app}
`,
}

// TestInstallStagesKeepTheOrderThatMatters installs a chart whose kinds depend on each other
// and reads, from the revision at which etcd stored each object, the order the API server
// received them in: the Secret after its ServiceAccount, the RoleBinding after its Role, the
// Deployment after everything its Pods use.
func TestInstallStagesKeepTheOrderThatMatters(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "staged", stagedChart)

	ctx, ns, c := t.Context(), env.Namespace, env.Client
	// The Deployment's and the Service's revisions move after they are created (status): their
	// creation is read from watches opened before the install, whose first event is the creation.
	deployments, err := c.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer deployments.Stop()
	services, err := c.CoreV1().Services(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer services.Stop()
	berthtest.MustBerth(t, env, "install", "s", chart)

	created := map[string]int64{}
	note := func(kind string, obj metav1.Object, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("read %s: %v", kind, err)
		}
		rv, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
		if err != nil {
			t.Fatalf("%s: resourceVersion %q is not etcd's revision: %v", kind, obj.GetResourceVersion(), err)
		}
		created[kind] = rv
	}
	first := func(kind string, w watch.Interface) {
		t.Helper()
		ev, ok := <-w.ResultChan()
		if !ok || ev.Type != watch.Added {
			t.Fatalf("the watch of %s ended or began with %v, not the creation", kind, ev.Type)
		}
		note(kind, ev.Object.(metav1.Object), nil)
	}
	first("Deployment", deployments)
	first("Service", services)
	sa, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "app", metav1.GetOptions{})
	note("ServiceAccount", sa, err)
	sec, err := c.CoreV1().Secrets(ns).Get(ctx, "token", metav1.GetOptions{})
	note("Secret", sec, err)
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	note("ConfigMap", cm, err)
	role, err := c.RbacV1().Roles(ns).Get(ctx, "app", metav1.GetOptions{})
	note("Role", role, err)
	rb, err := c.RbacV1().RoleBindings(ns).Get(ctx, "app", metav1.GetOptions{})
	note("RoleBinding", rb, err)

	for _, order := range [][2]string{
		{"ServiceAccount", "Secret"}, {"Role", "RoleBinding"},
		{"ServiceAccount", "Deployment"}, {"Secret", "Deployment"}, {"ConfigMap", "Deployment"},
		{"Role", "Deployment"}, {"RoleBinding", "Deployment"}, {"Service", "Deployment"},
	} {
		if created[order[0]] >= created[order[1]] {
			t.Errorf("%s was stored at revision %d, not before %s (%d)", order[0], created[order[0]], order[1], created[order[1]])
		}
	}
}
