package lifecycle

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/cluster"
	berthlifecycle "github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

var noFinalizers = []byte(`{"metadata":{"finalizers":null}}`)

// TestUninstallNamesCRDCleanup: an uninstall that deletes a CRD whose instance has a finalizer
// of its own waits on the API server's CRD cleanup finalizer. Its blocker names the API server's
// CRD cleanup as the holder, quotes the CRD's Terminating condition, and names the instance it
// waits for; it does not call the holder an unknown controller.
func TestUninstallNamesCRDCleanup(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	group := "cleanup" + berthtest.Suffix(env) + ".example.com"
	crdName := "widgets." + group
	chart := berthtest.WriteChart(t, "widgets", map[string]string{"templates/crd.yaml": widgetCRD(group, "Namespaced", []string{"v1"}, "size")})
	berthtest.MustBerth(t, env, "install", "widgets", chart)

	widgets := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}).Namespace(env.Namespace)
	crds := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	held := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "held", "finalizers": []any{"example.com/hold"}},
	}}
	// The CRD may be Established a moment before its resource is served.
	poll(t, "the Widget is created", func(ctx context.Context) (bool, error) {
		_, err := widgets.Create(ctx, held, metav1.CreateOptions{})
		return err == nil, nil
	})
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = widgets.Patch(ctx, "held", types.MergePatchType, noFinalizers, metav1.PatchOptions{})
		_ = crds.Delete(ctx, crdName, metav1.DeleteOptions{})
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := crds.Get(ctx, crdName, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})

	stdout, stderr, err := berthtest.Berth(t, env, "uninstall", "widgets", "--timeout", "5s", "-o", "json")
	if cli.ExitCode(err) != cli.ExitBlocked {
		t.Fatalf("uninstall: exit %d (%v), want %d\n%s", cli.ExitCode(err), err, cli.ExitBlocked, stderr)
	}
	msg := err.Error()
	for _, want := range []string{
		"finalizer " + cluster.CRDCleanupFinalizer + ", removed by the API server's CRD cleanup",
		"condition Terminating=True (InstanceDeletion",
		"waits for Widget." + group + "/" + env.Namespace + "/held: being deleted, waiting for finalizers example.com/hold",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the uninstall's error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "unknown controller") {
		t.Errorf("the uninstall's error calls a holder an unknown controller:\n%s", msg)
	}

	var res berthlifecycle.UninstallResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("uninstall -o json: %v\n%s", err, stdout)
	}
	f := blockerFinalizer(res.Blockers, crdName, cluster.CRDCleanupFinalizer)
	if f == nil || f.Holder != cluster.HeldByCRDCleanup || len(f.Conditions) != 1 || f.Conditions[0].Type != "Terminating" ||
		!strings.HasPrefix(f.Conditions[0].Reason, "InstanceDeletion") || f.Conditions[0].Message == "" ||
		len(f.WaitsFor) != 1 || f.WaitsFor[0].Object.Name != "held" {
		t.Errorf("the blocker of CRD %s reports its cleanup finalizer as %+v, want it held by %s, with the CRD's Terminating condition and the Widget it waits for", crdName, f, cluster.HeldByCRDCleanup)
	}
}

// TestUninstallNamesPVCProtection: an uninstall that deletes a claim a running Pod uses waits on
// the PVC protection finalizer; its blocker names the PVC protection controller and the Pod.
func TestUninstallNamesPVCProtection(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "claim", map[string]string{"templates/pvc.yaml": `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`})
	berthtest.MustBerth(t, env, "install", "claim", chart)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "user"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
			}}},
		},
	}
	pods := env.Client.CoreV1().Pods(env.Namespace)
	if _, err := pods.Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The PVC protection controller counts only Pods bound to a node.
	poll(t, "the Pod is bound to a node", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "user", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", nil
	})

	stdout, stderr, err := berthtest.Berth(t, env, "uninstall", "claim", "--timeout", "5s", "-o", "json")
	if cli.ExitCode(err) != cli.ExitBlocked {
		t.Fatalf("uninstall: exit %d (%v), want %d\n%s", cli.ExitCode(err), err, cli.ExitBlocked, stderr)
	}
	msg := err.Error()
	for _, want := range []string{
		"finalizer " + cluster.PVCProtectionFinalizer + ", removed by the PVC protection controller",
		"waits for Pod/" + env.Namespace + "/user",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the uninstall's error does not say %q:\n%s", want, msg)
		}
	}
	var res berthlifecycle.UninstallResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("uninstall -o json: %v\n%s", err, stdout)
	}
	f := blockerFinalizer(res.Blockers, "data", cluster.PVCProtectionFinalizer)
	if f == nil || f.Holder != cluster.HeldByPVCProtection || len(f.WaitsFor) != 1 || f.WaitsFor[0].Object.Name != "user" {
		t.Errorf("the blocker of PVC data reports its protection finalizer as %+v, want it held by %s, waiting for Pod user", f, cluster.HeldByPVCProtection)
	}

	// Once the Pod is gone, the uninstall goes on.
	if err := pods.Delete(t.Context(), "user", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	berthtest.MustBerth(t, env, "uninstall", "claim")
}

// blockerFinalizer finds, among blockers, the finalizer named finalizer of the object named name.
func blockerFinalizer(blockers []cluster.Blocker, name, finalizer string) *cluster.FinalizerReport {
	for _, b := range blockers {
		if b.Object.Name != name {
			continue
		}
		for i := range b.Finalizers {
			if b.Finalizers[i].Name == finalizer {
				return &b.Finalizers[i]
			}
		}
	}
	return nil
}

// poll waits, within a minute, until cond holds.
func poll(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, cond); err != nil {
		t.Fatalf("waiting until %s: %v", what, err)
	}
}
