package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {devcluster.berth.dev/start: 1s}
    spec:
      containers: [{name: web, image: example.invalid/web}]
`

func setup(t *testing.T) (*testenv.Env, *cluster.Client) {
	env := testenv.New(t)
	return env, cluster.New(env.Dynamic, env.Mapper)
}

func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestApplyWaitReadyDeleteWaitAbsent(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	ctx := deadline(t)
	obj := object(t, deployment)
	if err := c.Normalize(obj, env.Namespace); err != nil {
		t.Fatal(err)
	}
	live, err := c.Apply(ctx, obj, cluster.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := resource.IdentityOf(live)
	if id != (resource.Identity{Group: "apps", Kind: "Deployment", Namespace: env.Namespace, Name: "web"}) {
		t.Fatalf("applied %s", id)
	}
	var seen []string
	if err := c.WaitReady(ctx, []resource.Identity{id}, readiness.Options{}, func(_ resource.Identity, r readiness.Result) {
		seen = append(seen, string(r.State))
	}); err != nil {
		t.Fatalf("wait ready: %v", err)
	}
	if len(seen) < 2 || seen[len(seen)-1] != string(readiness.Ready) {
		t.Errorf("progress %v, want InProgress reports ending with Ready", seen)
	}
	got, err := c.Get(ctx, id)
	if err != nil || got == nil {
		t.Fatalf("get: %v, %v", got, err)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "status", "availableReplicas"); n != 2 {
		t.Errorf("availableReplicas %d after WaitReady, want 2", n)
	}
	if mf := got.GetManagedFields(); len(mf) == 0 || mf[0].Manager != cluster.FieldManager {
		t.Errorf("managed fields %v, want manager %s", mf, cluster.FieldManager)
	}

	res, err := c.Delete(ctx, id, live.GetUID(), cluster.DeleteOptions{})
	if err != nil || res != cluster.Deleted {
		t.Fatalf("delete: %v, %v", res, err)
	}
	if err := c.WaitAbsent(ctx, map[resource.Identity]types.UID{id: live.GetUID()}, nil); err != nil {
		t.Fatalf("wait absent: %v", err)
	}
	pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d pods left after foreground deletion was waited for", len(pods.Items))
	}
}

func TestDeleteSparesARecreatedObject(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	ctx := deadline(t)
	first := env.Apply(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}`)
	id := resource.IdentityOf(first)
	if _, err := c.Delete(ctx, id, first.GetUID(), cluster.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitAbsent(ctx, map[resource.Identity]types.UID{id: first.GetUID()}, nil); err != nil {
		t.Fatal(err)
	}
	second := env.Apply(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}`)
	res, err := c.Delete(ctx, id, first.GetUID(), cluster.DeleteOptions{})
	if err != nil || res != cluster.AlreadyGone {
		t.Fatalf("delete by the old UID: %v, %v; want %q", res, err, cluster.AlreadyGone)
	}
	if got, _ := c.Get(ctx, id); got == nil || got.GetUID() != second.GetUID() {
		t.Errorf("the recreated ConfigMap was deleted")
	}
	// The old UID is gone even though the name exists again.
	if err := c.WaitAbsent(ctx, map[resource.Identity]types.UID{id: first.GetUID()}, nil); err != nil {
		t.Errorf("wait absent for the old UID: %v", err)
	}
}

func TestWaitAbsentNamesFinalizer(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	cm := env.Apply(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: held, finalizers: [example.com/hold]}}`)
	id := resource.IdentityOf(cm)
	ctx := deadline(t)
	if _, err := c.Delete(ctx, id, cm.GetUID(), cluster.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := c.WaitAbsent(short, map[resource.Identity]types.UID{id: cm.GetUID()}, nil)
	var we *cluster.WaitError
	if !errors.As(err, &we) || we.Pending[id] != "being deleted, waiting for finalizers example.com/hold" {
		t.Fatalf("wait absent: %v, want the finalizer named", err)
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitAbsent(ctx, map[resource.Identity]types.UID{id: cm.GetUID()}, nil); err != nil {
		t.Errorf("wait absent after the finalizer was removed: %v", err)
	}
}

func TestWaitReadyReportsFailure(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	job := env.Apply(t, `
apiVersion: batch/v1
kind: Job
metadata: {name: broken}
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {devcluster.berth.dev/outcome: fail, devcluster.berth.dev/run: 0s}}
    spec:
      restartPolicy: Never
      containers: [{name: job, image: example.invalid/job}]
`)
	err := c.WaitReady(deadline(t), []resource.Identity{resource.IdentityOf(job)}, readiness.Options{WaitForJobs: true}, nil)
	var we *cluster.WaitError
	if !errors.As(err, &we) || we.Failed == nil || *we.Failed != resource.IdentityOf(job) {
		t.Fatalf("wait ready: %v, want the Job named as failed", err)
	}
}

func TestUnknownKind(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	obj := object(t, `{apiVersion: nothing.example.com/v1, kind: Gadget, metadata: {name: g}}`)
	err := c.Normalize(obj, env.Namespace)
	if !cluster.IsUnknownKind(err) {
		t.Fatalf("normalize an unknown kind: %v, want UnknownKindError", err)
	}
	if want := "unknown kind Gadget in nothing.example.com/v1"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// A wait whose objects the client may not list ends with the API server's refusal, naming the
// missing permission, instead of retrying the list until its deadline.
func TestWaitEndsOnARefusedList(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	cm := env.Apply(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: unseen}}`)
	id := resource.IdentityOf(cm)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + env.Namespace + ":default"}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := cluster.New(dyn, env.Mapper)
	ctx := deadline(t)
	for name, wait := range map[string]func() error{
		"ready":  func() error { return c.WaitReady(ctx, []resource.Identity{id}, readiness.Options{}, nil) },
		"absent": func() error { return c.WaitAbsent(ctx, map[resource.Identity]types.UID{id: cm.GetUID()}, nil) },
		"window": func() error {
			return c.WatchWindow(ctx, []resource.Identity{id}, cluster.WindowOptions{For: time.Hour}, nil)
		},
	} {
		err := wait()
		if !apierrors.IsForbidden(err) || ctx.Err() != nil {
			t.Errorf("wait %s: %v, want the refusal to list configmaps", name, err)
		}
	}
}
