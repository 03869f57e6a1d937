// Package releasetest holds what tests of berth controller share across packages: a client of
// the controller's scheme once the Release CRD is served, ServiceAccounts with the rights a
// Release acts with, a Helm chart repository of packaged charts, and waits on Releases.
//
// Every helper takes the test's testing.TB and fails the test on errors it does not return.
package releasetest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/provenance"
	"helm.sh/helm/v4/pkg/repo/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/crds"
	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
)

// WaitTimeout bounds each wait for the controller.
const WaitTimeout = 2 * time.Minute

// Everything is every right (within a namespace, through a Role).
var Everything = rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}

// Client installs the CRDs (or finds them), waits until they are served, and returns a client
// of the controller's scheme.
func Client(t testing.TB, env *testenv.Env) client.Client {
	t.Helper()
	crdClient := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	var kinds []schema.GroupVersionKind
	for _, data := range crds.All() {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				kinds = append(kinds, schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind})
			}
		}
		if _, err := crdClient.Create(t.Context(), &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, WaitTimeout, true, func(ctx context.Context) (bool, error) {
			got, err := crdClient.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("wait for CRD %s: %v", crd.Name, err)
		}
	}
	// Established is not yet served: a client's REST mapper reads discovery, which may lag the
	// condition. Wait until discovery lists every kind of the CRDs.
	disco := discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, WaitTimeout, true, func(context.Context) (bool, error) {
		return servesAll(disco, kinds)
	})
	if err != nil {
		t.Fatalf("wait for discovery of the CRDs %v: %v", kinds, err)
	}
	scheme, err := controller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// servesAll reports whether discovery lists every kind given; a group version not found yet is
// not an error.
func servesAll(disco discovery.DiscoveryInterface, kinds []schema.GroupVersionKind) (bool, error) {
	for _, gvk := range kinds {
		list, err := disco.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		found := false
		for _, r := range list.APIResources {
			found = found || r.Kind == gvk.Kind
		}
		if !found {
			return false, nil
		}
	}
	return true, nil
}

// ServiceAccount creates the ServiceAccount name in the test's namespace with the rules given,
// in a Role of the namespace: no right beyond them.
func ServiceAccount(t testing.TB, env *testenv.Env, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx, ns := t.Context(), env.Namespace
	if _, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rbac := env.Client.RbacV1()
	if _, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// Deployer creates the ServiceAccount name with every right in the test's namespace, and none
// beyond it.
func Deployer(t testing.TB, env *testenv.Env, name string) {
	t.Helper()
	ServiceAccount(t, env, name, Everything)
}

// ServeCharts serves a Helm chart repository of the packaged charts (.tgz) given, each with its
// provenance file (.tgz.prov) when it has one, and returns its URL.
func ServeCharts(t testing.TB, packages ...string) string {
	t.Helper()
	dir := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	WriteRepository(t, dir, srv.URL, packages...)
	return srv.URL
}

// WriteRepository writes into dir a Helm chart repository served at url: the packaged charts
// given, each with its provenance file (.tgz.prov) when it has one, and their index.
func WriteRepository(t testing.TB, dir, url string, packages ...string) {
	t.Helper()
	index := repo.NewIndexFile()
	for _, p := range packages {
		ch, err := loader.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(p)
		copyFile(t, p, filepath.Join(dir, name))
		// A provenance file beside the package is served beside it.
		if _, err := os.Stat(p + ".prov"); err == nil {
			copyFile(t, p+".prov", filepath.Join(dir, name+".prov"))
		}
		digest, err := provenance.DigestFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := index.MustAdd(ch.Metadata, name, url, digest); err != nil {
			t.Fatal(err)
		}
	}
	index.SortEntries()
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// RunController runs a controller with options o until stop is called or the test ends; an
// error it ends with, other than its cancellation, fails the test.
func RunController(t testing.TB, env *testenv.Env, o controller.Options) (stop func()) {
	t.Helper()
	mgr, err := controller.NewManager(env.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v", strings.TrimSpace("controller "+o.Identity), err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// WaitFor waits until the Release name satisfies cond, and returns it.
func WaitFor(t testing.TB, c client.Client, ns, name, what string, cond func(*v1alpha1.Release) bool) *v1alpha1.Release {
	t.Helper()
	var rel v1alpha1.Release
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, WaitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &rel); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(&rel), nil
	})
	if err != nil {
		out, _ := yaml.Marshal(rel.Status)
		t.Fatalf("wait until Release %s/%s %s: %v\nstatus:\n%s", ns, name, what, err, out)
	}
	return &rel
}

// WaitForRollout waits until the Rollout name satisfies cond, and returns it.
func WaitForRollout(t testing.TB, c client.Client, ns, name, what string, cond func(*v1alpha1.Rollout) bool) *v1alpha1.Rollout {
	t.Helper()
	var ro v1alpha1.Rollout
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, WaitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ro); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(&ro), nil
	})
	if err != nil {
		out, _ := yaml.Marshal(ro.Status)
		t.Fatalf("wait until Rollout %s/%s %s: %v\nstatus:\n%s", ns, name, what, err, out)
	}
	return &ro
}

// WaitGone waits until the Release name is gone.
func WaitGone(t testing.TB, c client.Client, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, WaitTimeout, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.Release{})), nil
	})
	if err != nil {
		var rel v1alpha1.Release
		_ = c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &rel)
		out, _ := yaml.Marshal(rel.Status)
		t.Fatalf("wait until Release %s/%s is gone: %v\nstatus:\n%s", ns, name, err, out)
	}
}

// Condition returns a condition of rel, or nil.
func Condition(rel *v1alpha1.Release, typ string) *metav1.Condition {
	for i := range rel.Status.Conditions {
		if rel.Status.Conditions[i].Type == typ {
			return &rel.Status.Conditions[i]
		}
	}
	return nil
}
