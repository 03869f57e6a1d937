package lifecycle

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// manifestObjects returns the objects of a release's recorded manifest, per berth get manifest.
func manifestObjects(t *testing.T, env *testenv.Env, name string) []*unstructured.Unstructured {
	t.Helper()
	manifest, _ := berthtest.MustBerth(t, env, "get", "manifest", name)
	objs, err := resource.ParseManifest(manifest)
	if err != nil {
		t.Fatalf("parse the manifest of release %s: %v", name, err)
	}
	if len(objs) == 0 {
		t.Fatalf("release %s records an empty manifest", name)
	}
	return objs
}

// identity is obj's identity with the test's namespace when obj is namespaced and has none.
func identity(t *testing.T, env *testenv.Env, obj *unstructured.Unstructured) resource.Identity {
	t.Helper()
	id := resource.IdentityOf(obj)
	if id.Namespace == "" && namespaced(t, env, obj) {
		id.Namespace = env.Namespace
	}
	return id
}

// namespaced reports whether obj's kind is namespaced.
func namespaced(t *testing.T, env *testenv.Env, obj *unstructured.Unstructured) bool {
	t.Helper()
	gvk := obj.GroupVersionKind()
	m, err := env.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("map %s: %v", resource.IdentityOf(obj), err)
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace
}

// liveObject returns the live copy of obj, or nil when it does not exist.
func liveObject(t *testing.T, env *testenv.Env, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got, err := env.Resource(t, obj.GetAPIVersion(), obj.GetKind()).Get(t.Context(), obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get %s: %v", identity(t, env, obj), err)
	}
	return got
}

// assertDeployed checks that every object of the release's recorded manifest exists and carries
// Helm's ownership metadata for the release, and returns the live objects by identity.
func assertDeployed(t *testing.T, env *testenv.Env, name string) map[resource.Identity]*unstructured.Unstructured {
	t.Helper()
	out := map[resource.Identity]*unstructured.Unstructured{}
	for _, obj := range manifestObjects(t, env, name) {
		id := identity(t, env, obj)
		got := liveObject(t, env, obj)
		if got == nil {
			t.Errorf("%s of release %s does not exist", id, name)
			continue
		}
		if rel, ns, ok := resource.OwnedBy(got); !ok || rel != name || ns != env.Namespace {
			t.Errorf("%s has labels %v and annotations %v, want Helm's ownership metadata for release %s/%s",
				id, got.GetLabels(), got.GetAnnotations(), env.Namespace, name)
		}
		out[id] = got
	}
	return out
}

// assertGone checks, by listing every kind among objs, that none of objs exists and that no
// object of those kinds belongs to the release.
func assertGone(t *testing.T, env *testenv.Env, name string, objs []*unstructured.Unstructured) {
	t.Helper()
	names := map[schema.GroupKind]map[string]bool{}
	versions := map[schema.GroupKind]string{}
	for _, obj := range objs {
		gk := obj.GroupVersionKind().GroupKind()
		if names[gk] == nil {
			names[gk] = map[string]bool{}
			versions[gk] = obj.GetAPIVersion()
		}
		names[gk][obj.GetName()] = true
	}
	for _, gk := range slices.SortedFunc(maps.Keys(names), func(a, b schema.GroupKind) int { return strings.Compare(a.String(), b.String()) }) {
		list, err := env.Resource(t, versions[gk], gk.Kind).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list %s: %v", gk, err)
		}
		for _, item := range list.Items {
			rel, ns, _ := resource.OwnedBy(&item)
			if (names[gk][item.GetName()] && (item.GetNamespace() == "" || item.GetNamespace() == env.Namespace)) ||
				(rel == name && ns == env.Namespace) {
				t.Errorf("%s of release %s still exists (deletionTimestamp %v)", resource.IdentityOf(&item), name, item.GetDeletionTimestamp())
			}
		}
	}
}

// assertNoDependents checks that no ReplicaSet or Pod is left in the test's namespace.
func assertNoDependents(t *testing.T, env *testenv.Env) {
	t.Helper()
	for _, k := range []struct{ apiVersion, kind string }{{"apps/v1", "ReplicaSet"}, {"v1", "Pod"}} {
		list, err := env.Resource(t, k.apiVersion, k.kind).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list %s: %v", k.kind, err)
		}
		for _, item := range list.Items {
			t.Errorf("%s is left behind (deletionTimestamp %v)", resource.IdentityOf(&item), item.GetDeletionTimestamp())
		}
	}
}

// revision is one entry of berth history -o json or helm history -o json.
type revision struct {
	Revision    int    `json:"revision"`
	Status      string `json:"status"`
	Description string `json:"description"`
}

// parseHistory reads the JSON output of a history command.
func parseHistory(t *testing.T, out string) []revision {
	t.Helper()
	var h []revision
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("parse history: %v\n%s", err, out)
	}
	return h
}

// assertHistory checks the release's history as berth history -o json prints it.
func assertHistory(t *testing.T, env *testenv.Env, name string, want ...revision) {
	t.Helper()
	history, _ := berthtest.MustBerth(t, env, "history", name, "-o", "json")
	got := parseHistory(t, history)
	if !slices.Equal(got, want) {
		t.Errorf("berth history %s:\n got %+v\nwant %+v", name, got, want)
	}
}

// assertNotFound checks that berth status knows nothing of the release.
func assertNotFound(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	stdout, stderr, err := berthtest.Berth(t, env, "status", name)
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("berth status %s after uninstall: err %v, want a release not found error\nstdout:\n%s\nstderr:\n%s", name, err, stdout, stderr)
	}
}

// snapshot returns the identity and resourceVersion of every object of the test's namespace,
// events aside.
func snapshot(t *testing.T, env *testenv.Env) map[string]string {
	t.Helper()
	lists, err := env.Client.Discovery().ServerPreferredNamespacedResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatalf("discover namespaced resources: %v", err)
	}
	out := map[string]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			// Events come and go; v1 Endpoints are deprecated and mirrored by EndpointSlices.
			if r.Name == "events" || r.Name == "endpoints" || strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			list, err := env.Dynamic.Resource(gv.WithResource(r.Name)).Namespace(env.Namespace).List(t.Context(), metav1.ListOptions{})
			if apierrors.IsNotFound(err) {
				continue // a kind whose CRD another test removed since discovery: nothing of it is left
			}
			if err != nil {
				t.Fatalf("list %s: %v", gv.WithResource(r.Name), err)
			}
			for _, item := range list.Items {
				out[resource.IdentityOf(&item).String()] = item.GetResourceVersion()
			}
		}
	}
	return out
}

// assertUnchanged checks that the test's namespace holds exactly the objects of before, each
// at the same resourceVersion.
func assertUnchanged(t *testing.T, env *testenv.Env, before map[string]string) {
	t.Helper()
	after := snapshot(t, env)
	for id, rv := range after {
		if old, ok := before[id]; !ok {
			t.Errorf("%s was created", id)
		} else if old != rv {
			t.Errorf("%s was changed (resourceVersion %s, was %s)", id, rv, old)
		}
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			t.Errorf("%s was deleted", id)
		}
	}
}

// replicas returns a live Deployment's spec.replicas and status.readyReplicas.
func replicas(t *testing.T, deploy *unstructured.Unstructured) (spec, ready int64) {
	t.Helper()
	spec, _, err := unstructured.NestedInt64(deploy.Object, "spec", "replicas")
	if err != nil {
		t.Fatalf("%s: spec.replicas: %v", resource.IdentityOf(deploy), err)
	}
	ready, _, _ = unstructured.NestedInt64(deploy.Object, "status", "readyReplicas")
	return spec, ready
}

// only returns the one live object of a kind, failing the test unless there is exactly one.
func only(t *testing.T, objs map[resource.Identity]*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for id, obj := range objs {
		if id.Kind == kind {
			found = append(found, obj)
		}
	}
	if len(found) != 1 {
		t.Fatalf("release has %d objects of kind %s, want 1", len(found), kind)
	}
	return found[0]
}

// identities returns the identities of objs, as written.
func identities(objs []*unstructured.Unstructured) []resource.Identity {
	ids := make([]resource.Identity, 0, len(objs))
	for _, obj := range objs {
		ids = append(ids, resource.IdentityOf(obj))
	}
	return ids
}

// assertMatchesManifest checks that each object of the release's recorded manifest is live as
// berth would apply it: a server-side dry-run apply of the recorded object, with berth's field
// manager and Helm's ownership metadata, changes nothing but bookkeeping.
func assertMatchesManifest(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	for _, obj := range manifestObjects(t, env, name) {
		id := identity(t, env, obj)
		resource.SetOwnership(obj, name, env.Namespace)
		ri := env.Resource(t, obj.GetAPIVersion(), obj.GetKind())
		live, err := ri.Get(t.Context(), obj.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Errorf("get %s: %v", id, err)
			continue
		}
		applied, err := ri.Apply(t.Context(), obj.GetName(), obj, metav1.ApplyOptions{
			FieldManager: cluster.FieldManager, Force: true, DryRun: []string{metav1.DryRunAll},
		})
		if err != nil {
			t.Errorf("dry-run apply %s: %v", id, err)
			continue
		}
		if diff := cmp.Diff(withoutBookkeeping(live), withoutBookkeeping(applied)); diff != "" {
			t.Errorf("%s differs from the recorded manifest (-live +manifest):\n%s", id, diff)
		}
	}
}

// withoutBookkeeping returns obj's content without status and the metadata the API server
// keeps for itself.
func withoutBookkeeping(obj *unstructured.Unstructured) map[string]any {
	out := obj.DeepCopy().Object
	delete(out, "status")
	if md, ok := out["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
		delete(md, "resourceVersion")
	}
	return out
}
