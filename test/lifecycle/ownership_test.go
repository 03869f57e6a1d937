package lifecycle

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestOwnershipConflict installs an object that belongs to another release: refused, then adopted
// with --take-ownership.
func TestOwnershipConflict(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	shared := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  owner: {{ .Release.Name }}\n"
	a := berthtest.WriteChart(t, "a", map[string]string{"templates/shared.yaml": shared})
	b := berthtest.WriteChart(t, "b", map[string]string{
		"templates/shared.yaml": shared,
		"templates/own.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b-own\n",
	})
	berthtest.MustBerth(t, env, "install", "a", a)
	before := snapshot(t, env)

	_, _, err := berthtest.Berth(t, env, "install", "b", b)
	if err == nil {
		t.Fatal("berth install b succeeded over an object of release a, want it refused")
	}
	for _, want := range []string{"ConfigMap/" + env.Namespace + "/shared", `release "a"`, "--take-ownership"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("berth install b: error does not name %q:\n%v", want, err)
		}
	}
	assertUnchanged(t, env, before)

	berthtest.MustBerth(t, env, "install", "b", b, "--take-ownership")
	objs := assertDeployed(t, env, "b")
	if len(objs) != 2 {
		t.Errorf("release b has %d objects, want 2", len(objs))
	}
	for _, obj := range objs {
		if obj.GetName() == "shared" {
			if owner, _, _ := unstructured.NestedString(obj.Object, "data", "owner"); owner != "b" {
				t.Errorf("ConfigMap shared has data.owner %q, want b", owner)
			}
		}
	}
	assertHistory(t, env, "b", revision{1, "deployed", "Install complete"})

	// An upgrade that brings in an object of another release is refused the same way.
	c := berthtest.WriteChart(t, "c", map[string]string{"templates/own.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c-own\n"})
	berthtest.MustBerth(t, env, "install", "c", c)
	before = snapshot(t, env)
	_, _, err = berthtest.Berth(t, env, "upgrade", "c", b)
	if err == nil {
		t.Fatal("berth upgrade c succeeded over objects of release b, want it refused")
	}
	for _, want := range []string{"ConfigMap/" + env.Namespace + "/shared", "ConfigMap/" + env.Namespace + "/b-own", `release "b"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("berth upgrade c: error does not name %q:\n%v", want, err)
		}
	}
	assertUnchanged(t, env, before)
	assertHistory(t, env, "c", revision{1, "deployed", "Install complete"})
}
