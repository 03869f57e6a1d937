package doctor

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestCRDHeldByCleanup: a CRD being deleted whose instance has a finalizer of its own waits on
// the API server's CRD cleanup. Doctor names that holder, quotes the CRD's Terminating condition
// and the instance it waits for, and does not call it an unknown controller. (CRDs are
// cluster-wide, so not in parallel with the other tests.)
func TestCRDHeldByCleanup(t *testing.T) {
	env := testenv.New(t)
	group := "cleanup" + berthtest.Suffix(env) + ".example.com"
	name := "gadgets." + group
	applyCRD(t, env, name, fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[1]s}
spec:
  group: %[2]s
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:%[3]s
`, name, group, crdVersion("v1", true)))
	gadgets := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}).Namespace(env.Namespace)
	held := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "held", "finalizers": []any{"example.com/hold"}},
	}}
	// The CRD may be Established a moment before its resource is served.
	eventually(t, "the Gadget is created", func(ctx context.Context) (bool, error) {
		_, err := gadgets.Create(ctx, held, metav1.CreateOptions{})
		return err == nil, nil
	})
	t.Cleanup(func() {
		_, _ = gadgets.Patch(context.Background(), "held", types.MergePatchType, noFinalizers, metav1.PatchOptions{})
	})
	crds := env.Resource(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition")
	if err := crds.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the CRD states it is terminating", func(ctx context.Context) (bool, error) {
		c, err := crds.Get(ctx, name, metav1.GetOptions{})
		return err == nil && hasCondition(c, "Terminating", "True"), nil
	})

	rep, _ := runDoctor(t, env)
	got := find(rep, "finalizer", name)
	want := fmt.Sprintf("waits for Gadget.%s/%s/held (being deleted, waiting for finalizers example.com/hold)", group, env.Namespace)
	if len(got) != 1 || got[0].Finalizer == nil || got[0].Finalizer.Holder != cluster.HeldByCRDCleanup ||
		!strings.Contains(got[0].Problem, "states condition Terminating=True (InstanceDeletion") || !strings.Contains(got[0].Problem, want) ||
		!strings.Contains(got[0].Fix, "the API server's CRD cleanup") || strings.Contains(got[0].Fix, "unknown controller") {
		t.Errorf("findings about CRD %s: %+v, want it held by the API server's CRD cleanup, with its Terminating condition and the Gadget it waits for", name, got)
	}
}

// TestClaimHeldByPods: a claim being deleted that a running Pod uses waits on the PVC protection
// finalizer; doctor names the PVC protection controller and the Pod.
func TestClaimHeldByPods(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	env.Apply(t, `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}`)
	env.Apply(t, `{apiVersion: v1, kind: Pod, metadata: {name: user}, spec: {containers: [{name: app, image: example.invalid/app}], volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]}}`)
	pods := env.Client.CoreV1().Pods(env.Namespace)
	t.Cleanup(func() {
		_ = pods.Delete(context.Background(), "user", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	// The PVC protection controller counts only Pods bound to a node.
	eventually(t, "the Pod is bound to a node", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "user", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", nil
	})
	if err := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Delete(t.Context(), "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep, _ := runDoctor(t, env, "-n", env.Namespace)
	got := find(rep, "finalizer", "data")
	want := fmt.Sprintf("waits for Pod/%s/user (still exists, not being deleted)", env.Namespace)
	if len(got) != 1 || got[0].Finalizer == nil || got[0].Finalizer.Holder != cluster.HeldByPVCProtection ||
		!strings.Contains(got[0].Problem, want) || !strings.Contains(got[0].Fix, "the PVC protection controller") {
		t.Errorf("findings about PVC data: %+v, want it held by the PVC protection controller, waiting for Pod user", got)
	}
}

// TestUnreadableReleasesAreARead: a berth.dev Release that cannot be read in the version doctor
// asks for (its CRD's conversion webhook has no backend) is a read finding, not a permission
// one: running doctor as another user would not help. (CRDs are cluster-wide, so not in
// parallel with the other tests.)
func TestUnreadableReleasesAreARead(t *testing.T) {
	env := testenv.New(t)
	name := "releases.berth.dev"
	applyCRD(t, env, name, fmt.Sprintf(conversionCRD, name, "berth.dev", env.Namespace,
		crdVersion("v1alpha1", false)+crdVersion("v1zz", true), "releases", "release", "Release"))
	rels := env.Dynamic.Resource(schema.GroupVersionResource{Group: "berth.dev", Version: "v1zz", Resource: "releases"}).Namespace(env.Namespace)
	rel := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "berth.dev/v1zz", "kind": "Release", "metadata": map[string]any{"name": "web"},
	}}
	eventually(t, "the Release is created", func(ctx context.Context) (bool, error) {
		_, err := rels.Create(ctx, rel, metav1.CreateOptions{})
		return err == nil, nil
	})
	t.Cleanup(func() { _ = rels.Delete(context.Background(), "web", metav1.DeleteOptions{}) })

	rep, _ := runDoctor(t, env, "-n", env.Namespace)
	var got []doctor.Finding
	for _, f := range rep.Findings {
		if f.Check == "read" && f.Object.Group == "berth.dev" && f.Object.Kind == "Release" {
			got = append(got, f)
		}
	}
	if len(got) != 1 || got[0].Severity != doctor.Warning || !strings.HasPrefix(got[0].Problem, "cannot list releases.berth.dev in namespace "+env.Namespace+": ") ||
		got[0].Fix != "run berth doctor again once the API server answers" {
		t.Errorf("read findings about berth.dev Releases: %+v (all: %+v)", got, rep.Findings)
	}
	for _, f := range rep.Findings {
		if f.Check == "permission" {
			t.Errorf("a read error is reported as a missing permission: %+v", f)
		}
	}
}

// TestUninstallingReleaseAndExpiredLease: a release left uninstalling with no operation holding
// it is a blocker whose fix is berth uninstall, which finishes it; a release left pending whose
// last holder let its lease expire is a blocker that names that holder.
func TestUninstallingReleaseAndExpiredLease(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	now := time.Now()
	store := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	record := func(name string, statuses ...release.Status) {
		for v, status := range statuses {
			rel := &release.Release{
				Name: name, Namespace: env.Namespace, Version: v + 1,
				Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{APIVersion: "v2", Name: name, Version: "1.0.0"}},
				Info:  &release.Info{FirstDeployed: now, LastDeployed: now, Status: status},
			}
			if err := store.Create(t.Context(), rel); err != nil {
				t.Fatal(err)
			}
		}
	}
	record("gone", release.StatusDeployed, release.StatusUninstalling)
	record("web", release.StatusDeployed, release.StatusPendingUpgrade)
	// web's last holder ran on another host and has not renewed its lease for an hour.
	host, _ := os.Hostname()
	host = "not-" + host
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: release.LeaseKey("web"), Annotations: map[string]string{
			release.LeaseHostAnnotation: host, release.LeasePIDAnnotation: "4242",
			release.LeaseCommandAnnotation: "berth upgrade web", release.LeaseWhoAnnotation: "alice@" + host,
		}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(host + "/4242/0"),
			LeaseDurationSeconds: ptr.To[int32](30),
			AcquireTime:          &metav1.MicroTime{Time: now.Add(-2 * time.Hour)},
			RenewTime:            &metav1.MicroTime{Time: now.Add(-time.Hour)},
		},
	}
	if _, err := env.Client.CoordinationV1().Leases(env.Namespace).Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	rep, code := runDoctor(t, env, "-n", env.Namespace)
	gone := find(rep, "release", "gone")
	if len(gone) != 1 || gone[0].Severity != doctor.Blocker || gone[0].Problem != "revision 2 is uninstalling and no operation holds it" ||
		gone[0].Fix != fmt.Sprintf("berth uninstall gone -n %s (finishes the uninstall)", env.Namespace) {
		t.Errorf("findings about release gone: %+v", gone)
	}
	web := find(rep, "release", "web")
	wantProblem := fmt.Sprintf("revision 2 is pending-upgrade and no operation holds it (the last holder, alice@%[1]s running %q (pid 4242 on host %[1]s), let its lease expire)", host, "berth upgrade web")
	if len(web) != 1 || web[0].Severity != doctor.Blocker || web[0].Problem != wantProblem {
		t.Errorf("findings about release web: %+v, want the problem %q", web, wantProblem)
	}
	if code != cli.ExitDoctorBlockers {
		t.Errorf("exit code %d, want %d", code, cli.ExitDoctorBlockers)
	}

	// berth uninstall finishes the uninstall, and doctor finds nothing more of it.
	berthtest.MustBerth(t, env, "uninstall", "gone")
	if rep, _ := runDoctor(t, env, "-n", env.Namespace, "--release", "gone"); len(find(rep, "release", "gone")) != 0 {
		t.Errorf("release gone still reported after berth uninstall: %+v", rep.Findings)
	}
}
