//go:build sharedcharts

package lifecycle

import (
	"encoding/json"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestHelmCompatibility hands a podinfo release from berth to helm and from helm to berth. The
// first revision has a pod annotation the second drops: whoever upgrades must remove it, though
// the other tool applied it.
func TestHelmCompatibility(t *testing.T) {
	t.Parallel()
	const name = "podinfo"
	annotation := []string{"--set", "podAnnotations.team=web"}

	t.Run("berth to helm", func(t *testing.T) {
		t.Parallel()
		env := testenv.New(t)
		chart := berthtest.SharedChart(t, "podinfo")
		berthtest.MustBerth(t, env, append([]string{"install", name, chart, "--wait"}, annotation...)...)
		rev1 := manifestObjects(t, env, name)

		var list []struct{ Name, Status string }
		out := berthtest.MustHelm(t, env, "list", "-o", "json")
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("parse helm list: %v\n%s", err, out)
		}
		if want := []struct{ Name, Status string }{{name, "deployed"}}; !slices.Equal(list, want) {
			t.Errorf("helm list: got %+v, want %+v", list, want)
		}

		berthtest.MustHelm(t, env, "upgrade", name, chart, "--set", "replicaCount=2", "--wait")
		assertPodinfo(t, env, "helm upgrade", 2, "")
		history := parseHistory(t, berthtest.MustHelm(t, env, "history", name, "-o", "json"))
		want := []revision{{1, "superseded", "Install complete"}, {2, "deployed", "Upgrade complete"}}
		if !slices.Equal(history, want) {
			t.Errorf("helm history:\n got %+v\nwant %+v", history, want)
		}

		rev2 := manifestObjects(t, env, name)
		berthtest.MustHelm(t, env, "uninstall", name, "--wait")
		assertGone(t, env, name, slices.Concat(rev1, rev2))
		assertNotFound(t, env, name)
		berthtest.AssertNoRecords(t, env)
	})

	// Helm v4 installs with server-side apply; Helm 3, and Helm v4 with --server-side=false,
	// with client-side apply.
	for _, serverSide := range []string{"true", "false"} {
		t.Run("helm to berth/server-side="+serverSide, func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t)
			chart := berthtest.SharedChart(t, "podinfo")
			berthtest.MustHelm(t, env, append([]string{"install", name, chart, "--wait", "--server-side=" + serverSide}, annotation...)...)
			rev1 := manifestObjects(t, env, name)
			assertPodinfo(t, env, "helm install", 1, "web")

			berthtest.MustBerth(t, env, "upgrade", name, chart, "--set", "replicaCount=2", "--wait")
			assertMatchesManifest(t, env, name)
			assertPodinfo(t, env, "berth upgrade", 2, "")
			rev2 := manifestObjects(t, env, name)

			berthtest.MustBerth(t, env, "rollback", name, "--wait")
			assertMatchesManifest(t, env, name)
			assertPodinfo(t, env, "berth rollback", 1, "web")
			want := []revision{{1, "superseded", "Install complete"}, {2, "superseded", "Upgrade complete"}, {3, "deployed", "Rollback to 1"}}
			assertHistory(t, env, name, want...)
			if history := parseHistory(t, berthtest.MustHelm(t, env, "history", name, "-o", "json")); !slices.Equal(history, want) {
				t.Errorf("helm history:\n got %+v\nwant %+v", history, want)
			}

			berthtest.MustBerth(t, env, "uninstall", name)
			assertGone(t, env, name, slices.Concat(rev1, rev2))
			assertNoDependents(t, env)
			assertNotFound(t, env, name)
			berthtest.AssertNoRecords(t, env)
		})
	}
}

// assertPodinfo checks the live podinfo Deployment after a step: its replicas, all ready, and
// its pod template's team annotation ("" for none).
func assertPodinfo(t *testing.T, env *testenv.Env, step string, wantReplicas int64, wantTeam string) {
	t.Helper()
	deploy := only(t, assertDeployed(t, env, "podinfo"), "Deployment")
	if spec, ready := replicas(t, deploy); spec != wantReplicas || ready != wantReplicas {
		t.Errorf("after %s: Deployment has spec.replicas %d and %d ready, want %d and %d", step, spec, ready, wantReplicas, wantReplicas)
	}
	annotations, _, err := unstructured.NestedStringMap(deploy.Object, "spec", "template", "metadata", "annotations")
	if err != nil {
		t.Fatalf("%s: pod template annotations: %v", resource.IdentityOf(deploy), err)
	}
	if annotations["team"] != wantTeam {
		t.Errorf("after %s: pod template annotations %v, want team %q", step, annotations, wantTeam)
	}
}
