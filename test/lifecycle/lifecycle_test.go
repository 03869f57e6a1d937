//go:build sharedcharts

package lifecycle

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// lifecycle is a chart taken through install, upgrade, rollback and uninstall.
type lifecycle struct {
	chart string
	// release names the release; it is unique to the test when the chart has cluster-scoped objects.
	release func(env *testenv.Env) string
	// flags go to every command that deploys.
	flags []string
	// upgrade are the value flags of the upgrade, which must scale the chart's one Deployment to 2.
	upgrade []string
	// clusterScoped are kinds of cluster-scoped objects the release must have (and remove).
	clusterScoped []string
	// onlyInUpgrade is a kind of which the upgrade adds an object and the rollback deletes it.
	onlyInUpgrade string
}

func TestPodinfoLifecycle(t *testing.T) {
	t.Parallel()
	testLifecycle(t, lifecycle{
		chart:   "podinfo",
		release: func(*testenv.Env) string { return "podinfo" },
		// The PodDisruptionBudget exists only in revision 2: the rollback must delete it.
		upgrade:       []string{"--set", "replicaCount=2", "--set", "podDisruptionBudget.maxUnavailable=1"},
		onlyInUpgrade: "PodDisruptionBudget",
	})
}

func TestIngressNginxLifecycle(t *testing.T) {
	t.Parallel()
	testLifecycle(t, lifecycle{
		chart:         "ingress-nginx",
		release:       func(env *testenv.Env) string { return "nginx-" + berthtest.Suffix(env) },
		flags:         []string{"--no-hooks"},
		upgrade:       []string{"--set", "controller.replicaCount=2"},
		clusterScoped: []string{"ClusterRole", "ClusterRoleBinding", "IngressClass", "ValidatingWebhookConfiguration"},
	})
}

// testLifecycle installs, upgrades, rolls back and uninstalls the chart, checking the cluster
// and the history after each step.
func testLifecycle(t *testing.T, c lifecycle) {
	env := testenv.New(t)
	name := c.release(env)
	chart := berthtest.SharedChart(t, c.chart)
	deploy := func(args ...string) []*unstructured.Unstructured {
		t.Helper()
		berthtest.MustBerth(t, env, append(append(args, "--wait"), c.flags...)...)
		return manifestObjects(t, env, name)
	}
	// assertStep checks the cluster against the recorded manifest and the Deployment's replicas.
	assertStep := func(step string, want int64) {
		t.Helper()
		assertMatchesManifest(t, env, name)
		spec, ready := replicas(t, only(t, assertDeployed(t, env, name), "Deployment"))
		if spec != want || ready != want {
			t.Errorf("after %s: Deployment has spec.replicas %d and %d ready, want %d and %d", step, spec, ready, want, want)
		}
	}

	rev1 := deploy("install", name, chart)
	for _, kind := range c.clusterScoped {
		if !slices.ContainsFunc(rev1, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind && !namespaced(t, env, o) }) {
			t.Errorf("release %s has no cluster-scoped %s; it has %v", name, kind, identities(rev1))
		}
	}
	assertStep("install", 1)
	assertHistory(t, env, name, revision{1, "deployed", "Install complete"})

	rev2 := deploy(append([]string{"upgrade", name, chart}, c.upgrade...)...)
	assertStep("upgrade", 2)
	assertHistory(t, env, name,
		revision{1, "superseded", "Install complete"},
		revision{2, "deployed", "Upgrade complete"})

	rev3 := deploy("rollback", name, "1")
	assertStep("rollback", 1)
	assertHistory(t, env, name,
		revision{1, "superseded", "Install complete"},
		revision{2, "superseded", "Upgrade complete"},
		revision{3, "deployed", "Rollback to 1"})
	dropped := missingFrom(rev2, rev3)
	if c.onlyInUpgrade != "" && !slices.ContainsFunc(dropped, func(o *unstructured.Unstructured) bool { return o.GetKind() == c.onlyInUpgrade }) {
		t.Errorf("no %s is in revision 2 and not in revision 3; objects only in revision 2: %v", c.onlyInUpgrade, identities(dropped))
	}
	assertGone(t, env, name, dropped)

	berthtest.MustBerth(t, env, append([]string{"uninstall", name}, c.flags...)...)
	assertGone(t, env, name, slices.Concat(rev1, rev2, rev3))
	assertNoDependents(t, env)
	assertNotFound(t, env, name)
	berthtest.AssertNoRecords(t, env)
}

// missingFrom returns the objects of a whose identity is not in b.
func missingFrom(a, b []*unstructured.Unstructured) []*unstructured.Unstructured {
	in := map[resource.Identity]bool{}
	for _, obj := range b {
		in[resource.IdentityOf(obj)] = true
	}
	var out []*unstructured.Unstructured
	for _, obj := range a {
		if !in[resource.IdentityOf(obj)] {
			out = append(out, obj)
		}
	}
	return out
}
