package lifecycle_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// fakeCluster is a cluster without an API server, for the lifecycle's policy: it keeps objects in
// a map, knows the scope of the built-in kinds and of the CRDs applied to it, and every object is
// ready, every hook succeeds and every deletion is immediate.
type fakeCluster struct {
	mu      sync.Mutex
	objects map[resource.Identity]*unstructured.Unstructured
	// crds are the kinds CRDs applied to the cluster define, with their scope.
	crds map[schema.GroupKind]bool
	uid  int
	// window, when set, is what a watch window does instead of ending at once with no regression.
	window func(ctx context.Context, targets []resource.Identity, opts cluster.WindowOptions) error
}

func newFakeCluster() *fakeCluster {
	return &fakeCluster{objects: map[resource.Identity]*unstructured.Unstructured{}, crds: map[schema.GroupKind]bool{}}
}

var clusterScoped = map[string]bool{
	"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"PersistentVolume": true, "StorageClass": true, "PriorityClass": true,
}

var builtIn = map[string]bool{
	"ConfigMap": true, "Secret": true, "Service": true, "ServiceAccount": true, "Deployment": true, "Job": true,
	"Pod": true, "Role": true, "RoleBinding": true, "StatefulSet": true, "DaemonSet": true, "Ingress": true,
}

func (c *fakeCluster) Normalize(obj *unstructured.Unstructured, ns string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	gk := obj.GroupVersionKind().GroupKind()
	namespaced, known := c.crds[gk]
	switch {
	case clusterScoped[gk.Kind]:
		obj.SetNamespace("")
		return nil
	case builtIn[gk.Kind]:
		namespaced, known = true, true
	}
	if !known {
		return &cluster.UnknownKindError{GVK: obj.GroupVersionKind()}
	}
	if !namespaced {
		obj.SetNamespace("")
	} else if obj.GetNamespace() == "" {
		obj.SetNamespace(ns)
	}
	return nil
}

func (c *fakeCluster) Apply(_ context.Context, obj *unstructured.Unstructured, opts cluster.ApplyOptions) (*unstructured.Unstructured, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := resource.IdentityOf(obj)
	if !clusterScoped[id.Kind] && !builtIn[id.Kind] {
		if _, ok := c.crds[schema.GroupKind{Group: id.Group, Kind: id.Kind}]; !ok {
			return nil, &cluster.UnknownKindError{GVK: obj.GroupVersionKind()}
		}
	}
	out := obj.DeepCopy()
	old := c.objects[id]
	if old != nil {
		out.SetUID(old.GetUID())
	} else {
		c.uid++
		out.SetUID(types.UID("uid-" + strconv.Itoa(c.uid)))
	}
	out.SetResourceVersion(strconv.Itoa(c.uid))
	if opts.DryRun {
		if old == nil {
			// As the API server's: nothing was stored, so the answer has no resourceVersion.
			out.SetResourceVersion("")
		}
		return out, nil
	}
	c.uid++
	out.SetResourceVersion(strconv.Itoa(c.uid))
	c.objects[id] = out
	if id.IsCRD() {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &crd); err != nil {
			return nil, err
		}
		c.crds[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	}
	return out, nil
}

func (c *fakeCluster) Delete(_ context.Context, id resource.Identity, uid types.UID, opts cluster.DeleteOptions) (cluster.DeleteResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj := c.objects[id]
	if obj == nil || (uid != "" && obj.GetUID() != uid) {
		return cluster.AlreadyGone, nil
	}
	if !opts.DryRun {
		delete(c.objects, id)
	}
	return cluster.Deleted, nil
}

func (c *fakeCluster) ResetMapper() {}

func (c *fakeCluster) WaitReady(context.Context, []resource.Identity, readiness.Options, cluster.Progress) error {
	return nil
}

func (c *fakeCluster) WaitAbsent(context.Context, map[resource.Identity]types.UID, cluster.Progress) error {
	return nil
}

func (c *fakeCluster) Diagnose(_ context.Context, id resource.Identity, _ string, err error) cluster.Blocker {
	return cluster.Blocker{Object: id, Message: fmt.Sprint(err)}
}

func (c *fakeCluster) Get(_ context.Context, id resource.Identity) (*unstructured.Unstructured, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if obj := c.objects[id]; obj != nil {
		return obj.DeepCopy(), nil
	}
	return nil, nil
}

func (c *fakeCluster) Live(_ context.Context, ids []resource.Identity) (map[resource.Identity]*unstructured.Unstructured, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[resource.Identity]*unstructured.Unstructured{}
	for _, id := range ids {
		if obj := c.objects[id]; obj != nil {
			out[id] = obj.DeepCopy()
		}
	}
	return out, nil
}

func (c *fakeCluster) AdoptFields(context.Context, resource.Identity) error { return nil }

func (c *fakeCluster) Dependents(context.Context, resource.Identity) []cluster.DependentReport {
	return nil
}

// RunHook creates the hook, which writes one line to its log and succeeds at once.
func (c *fakeCluster) RunHook(ctx context.Context, obj *unstructured.Unstructured, opts cluster.HookOptions) (cluster.HookRun, error) {
	created, err := c.Apply(ctx, obj, cluster.ApplyOptions{})
	if err != nil {
		return cluster.HookRun{}, err
	}
	if opts.LogLine != nil {
		opts.LogLine(cluster.LogLine{Pod: obj.GetName() + "-pod", Container: "main", Line: "ran " + obj.GetName()})
	}
	return cluster.HookRun{Created: created, Result: readiness.Result{State: readiness.Ready, Message: "succeeded"}}, nil
}

func (c *fakeCluster) WatchWindow(ctx context.Context, targets []resource.Identity, opts cluster.WindowOptions, _ cluster.Progress) error {
	if c.window != nil {
		return c.window(ctx, targets, opts)
	}
	return nil
}

// fakeNamespaces are namespaces that all exist.
type fakeNamespaces struct{}

func (fakeNamespaces) Exists(context.Context, string) (bool, error) { return true, nil }
func (fakeNamespaces) Create(context.Context, string) error         { return nil }
func (fakeNamespaces) Delete(context.Context, string) error         { return nil }

// memoryJournals keep journals in memory, each with a version that every write changes; writes
// are conditional on it, as release.Journals' are.
type memoryJournals struct {
	mu       sync.Mutex
	j        map[string]*release.Journal
	versions map[string]string
	writes   int
}

// Get returns the journal of release name; nil when there is none.
func (m *memoryJournals) Get(ctx context.Context, name string) (*release.Journal, error) {
	j, _, err := m.Read(ctx, name)
	return j, err
}

// Object is nil: the journals are kept outside the cluster.
func (m *memoryJournals) Object(string) *unstructured.Unstructured { return nil }

func (m *memoryJournals) Read(_ context.Context, name string) (*release.Journal, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.j[name], m.versions[name], nil
}

func (m *memoryJournals) Put(_ context.Context, j *release.Journal, version string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.versions[j.Release] != version {
		return version, &release.JournalChangedError{Release: j.Release, Err: fmt.Errorf("at version %q, not %q", m.versions[j.Release], version)}
	}
	if m.j == nil {
		m.j, m.versions = map[string]*release.Journal{}, map[string]string{}
	}
	c := *j
	c.Steps = append([]string(nil), j.Steps...)
	m.j[j.Release] = &c
	m.writes++
	m.versions[j.Release] = strconv.Itoa(m.writes)
	return m.versions[j.Release], nil
}

func (m *memoryJournals) Delete(_ context.Context, name, version string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if version == "" || m.versions[name] == "" {
		return nil
	}
	if m.versions[name] != version {
		return &release.JournalChangedError{Release: name, Err: fmt.Errorf("at version %q, not %q", m.versions[name], version)}
	}
	delete(m.j, name)
	delete(m.versions, name)
	return nil
}
