package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/resource"
)

// TestFinalizersOfBuiltInHolders classifies the built-in finalizers on objects shaped as the
// API server and the controllers leave them, and quotes only the conditions by which a holder
// says why it waits.
func TestFinalizersOfBuiltInHolders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, manifest string
		want           []cluster.FinalizerReport
	}{
		{"a volume bound to a claim", `
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv1, finalizers: [kubernetes.io/pv-protection], deletionTimestamp: "2026-01-01T00:00:00Z"}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /data}, claimRef: {namespace: app, name: data}}
status: {phase: Bound}
`, []cluster.FinalizerReport{{Name: "kubernetes.io/pv-protection", Holder: cluster.HeldByPVProtection}}},
		{"a Deployment deleted in the foreground, and a ReplicaSet orphaning its Pods", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app, finalizers: [foregroundDeletion, orphan], deletionTimestamp: "2026-01-01T00:00:00Z"}
status: {conditions: [{type: Available, status: "False", reason: MinimumReplicasUnavailable, message: "Deployment does not have minimum availability."}]}
`, []cluster.FinalizerReport{
			{Name: "foregroundDeletion", Holder: cluster.HeldByGarbageCollector},
			{Name: "orphan", Holder: cluster.HeldByGarbageCollector},
		}},
		{"a namespace emptied by the namespace controller", `
apiVersion: v1
kind: Namespace
metadata: {name: app, deletionTimestamp: "2026-01-01T00:00:00Z"}
spec: {finalizers: [kubernetes]}
status:
  phase: Terminating
  conditions:
  - {type: NamespaceDeletionDiscoveryFailure, status: "False", reason: ResourcesDiscovered, message: All resources successfully discovered}
  - {type: NamespaceDeletionGroupVersionParsingFailure, status: "False", reason: ParsedGroupVersions, message: All legacy kube types successfully parsed}
  - {type: NamespaceDeletionContentFailure, status: "False", reason: ContentDeleted, message: All content successfully deleted, may be waiting on finalization}
  - {type: NamespaceContentRemaining, status: "True", reason: SomeResourcesRemain, message: "Some resources are remaining: configmaps. has 1 resource instances"}
  - {type: NamespaceFinalizersRemaining, status: "True", reason: SomeFinalizersRemain, message: "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"}
`, []cluster.FinalizerReport{{Name: "kubernetes", Holder: cluster.HeldByNamespaceController, Conditions: []cluster.Condition{
			{Type: "NamespaceContentRemaining", Status: "True", Reason: "SomeResourcesRemain", Message: "Some resources are remaining: configmaps. has 1 resource instances"},
			{Type: "NamespaceFinalizersRemaining", Status: "True", Reason: "SomeFinalizersRemain", Message: "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"},
		}}}},
		{"a CRD whose instances cannot be listed yet", `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com, finalizers: [customresourcecleanup.apiextensions.k8s.io], deletionTimestamp: "2026-01-01T00:00:00Z"}
spec: {group: example.com, scope: Namespaced, names: {plural: widgets, kind: Widget}, versions: [{name: v1, served: true, storage: true}]}
status:
  conditions:
  - {type: Established, status: "True", reason: InitialNamesAccepted, message: the initial names have been accepted}
  - {type: Terminating, status: "True", reason: InstanceDeletionFailed, message: "could not list instances: storage is (re)initializing"}
`, []cluster.FinalizerReport{{Name: "customresourcecleanup.apiextensions.k8s.io", Holder: cluster.HeldByCRDCleanup, Conditions: []cluster.Condition{
			{Type: "Terminating", Status: "True", Reason: "InstanceDeletionFailed", Message: "could not list instances: storage is (re)initializing"},
		}}}},
		{"a Pod counted by the Job controller, held by a controller of its own and by one unknown", `
apiVersion: v1
kind: Pod
metadata: {name: job-x, namespace: app, finalizers: [batch.kubernetes.io/job-tracking, example.com/hold, hold], deletionTimestamp: "2026-01-01T00:00:00Z"}
`, []cluster.FinalizerReport{
			{Name: "batch.kubernetes.io/job-tracking", Holder: cluster.HeldByJobController},
			{Name: "example.com/hold", Holder: cluster.HeldByController, Domain: "example.com"},
			{Name: "hold", Holder: cluster.HeldByUnknown},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, cluster.Finalizers(object(t, tc.manifest))); diff != "" {
				t.Errorf("Finalizers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDiagnoseNamespaceNamesTheNamespaceController: a namespace whose ConfigMap waits on a
// finalizer no controller removes stays Terminating; its blocker names the namespace controller
// as the holder of "kubernetes" and quotes what the namespace states is left.
func TestDiagnoseNamespaceNamesTheNamespaceController(t *testing.T) {
	t.Parallel()
	env, c := setup(t)
	ctx := deadline(t)
	ns := "held-" + env.Namespace
	if len(ns) > 63 {
		ns = ns[:63]
	}
	namespaces := env.Client.CoreV1().Namespaces()
	if _, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := env.Client.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cms.Patch(context.Background(), "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := namespaces.Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		n, err := namespaces.Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting until the namespace states its finalizers remaining: %v", err)
	}

	b := c.Diagnose(ctx, resource.Identity{Kind: "Namespace", Name: ns}, "DELETE", nil)
	if b.Kind != cluster.BlockedByFinalizer || len(b.Finalizers) != 1 || b.Finalizers[0].Name != "kubernetes" ||
		b.Finalizers[0].Holder != cluster.HeldByNamespaceController {
		t.Fatalf("blocker of namespace %s: %+v, want the finalizer kubernetes held by the namespace controller", ns, b)
	}
	if s := b.String(); !strings.Contains(s, "removed by the namespace controller") ||
		!strings.Contains(s, "condition NamespaceFinalizersRemaining=True (SomeFinalizersRemain): ") || !strings.Contains(s, "example.com/hold") ||
		strings.Contains(s, "unknown controller") {
		t.Errorf("blocker of namespace %s says:\n%s\nwant the namespace controller named and its condition quoted", ns, s)
	}
}
