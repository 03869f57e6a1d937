package lifecycle

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// keysChart is a ConfigMap with one key for each name in .Values.keys.
var keysChart = map[string]string{
	"values.yaml": "keys: []\n",
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: keys
data:
{{- range .Values.keys }}
  {{ . }}: "set"
{{- end }}
`,
}

// TestFieldManagerSharedWithHelm hands a release back and forth between helm and berth, each
// upgrade dropping one key of the ConfigMap: each tool's server-side apply must remove the key
// the other tool set, with no conflict and no --force-conflicts, because both apply as Helm v4's
// field manager and berth records the apply method ssa, as Helm v4 does.
func TestFieldManagerSharedWithHelm(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "keys", keysChart)
	const name = "shared"

	steps := []struct {
		tool string
		args []string
		keys []string
	}{
		{"berth", []string{"install", name, chart, "--set", "keys={a,b,c,d}"}, []string{"a", "b", "c", "d"}},
		{"helm", []string{"upgrade", name, chart, "--set", "keys={a,b,c}"}, []string{"a", "b", "c"}},
		{"berth", []string{"upgrade", name, chart, "--set", "keys={a,b}"}, []string{"a", "b"}},
		{"helm", []string{"upgrade", name, chart, "--set", "keys={a}"}, []string{"a"}},
		{"berth", []string{"rollback", name, "3"}, []string{"a", "b"}},
	}
	for _, s := range steps {
		what := s.tool + " " + strings.Join(s.args, " ")
		if s.tool == "berth" {
			berthtest.MustBerth(t, env, s.args...)
		} else {
			berthtest.MustHelm(t, env, s.args...)
		}
		assertKeys(t, env, what, s.keys)
		assertOnlyHelmApplies(t, env, what)
		if got := berthtest.LastRecord(t, env, name).ApplyMethod; got != "ssa" {
			t.Errorf("after %s: the record's apply method is %q, want ssa", what, got)
		}
	}
}

// TestFormerFieldManagerMoved takes a release whose ConfigMap carries the fields of berth's
// former field manager: the next upgrade moves them to the shared manager, and so removes the key
// the chart dropped.
func TestFormerFieldManagerMoved(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "keys", keysChart)
	const name = "former"
	berthtest.MustBerth(t, env, "install", name, chart, "--set", "keys={a,b}")

	// What an earlier berth left: its fields under the manager "berth".
	cms := env.Resource(t, "v1", "ConfigMap")
	cm, err := cms.Get(t.Context(), "keys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	entries := cm.GetManagedFields()
	for i := range entries {
		if entries[i].Manager == "helm" {
			entries[i].Manager = "berth"
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"managedFields": entries}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(t.Context(), "keys", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("give the fields to the former manager: %v", err)
	}
	if got := managers(t, env); !slices.Equal(got, []string{"berth/Apply"}) {
		t.Fatalf("managers before the upgrade: %v, want berth/Apply", got)
	}

	berthtest.MustBerth(t, env, "upgrade", name, chart, "--set", "keys={a}")
	assertKeys(t, env, "berth upgrade", []string{"a"})
	assertOnlyHelmApplies(t, env, "berth upgrade")
}

// assertKeys fails the test unless the ConfigMap's keys are want.
func assertKeys(t *testing.T, env *testenv.Env, what string, want []string) {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "keys", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after %s: %v", what, err)
	}
	var got []string
	for k := range cm.Data {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("after %s: the ConfigMap has keys %v, want %v", what, got, want)
	}
}

// assertOnlyHelmApplies fails the test unless the ConfigMap's one field manager is Helm v4's
// server-side apply.
func assertOnlyHelmApplies(t *testing.T, env *testenv.Env, what string) {
	t.Helper()
	if got := managers(t, env); !slices.Equal(got, []string{"helm/Apply"}) {
		t.Errorf("after %s: the ConfigMap's field managers are %v, want only helm/Apply", what, got)
	}
}

// managers lists the ConfigMap's field managers as manager/operation.
func managers(t *testing.T, env *testenv.Env) []string {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "keys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range cm.ManagedFields {
		out = append(out, e.Manager+"/"+string(e.Operation))
	}
	slices.Sort(out)
	return out
}

// TestForceConflictsMatchesHelm edits a key of each twin release's ConfigMap by hand, as another
// field manager, and upgrades with --server-side=true --force-conflicts: helm and berth both put
// the chart's value back and own the field again.
func TestForceConflictsMatchesHelm(t *testing.T) {
	t.Parallel()
	chart := berthtest.WriteChart(t, "keys", keysChart)
	for _, tool := range []string{"helm", "berth"} {
		env := testenv.New(t)
		run := func(args ...string) {
			if tool == "berth" {
				berthtest.MustBerth(t, env, args...)
			} else {
				berthtest.MustHelm(t, env, args...)
			}
		}
		run("install", "edited", chart, "--set", "keys={a}")
		cms := env.Client.CoreV1().ConfigMaps(env.Namespace)
		cm, err := cms.Get(t.Context(), "keys", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["a"] = "by hand"
		if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
		run("upgrade", "edited", chart, "--set", "keys={a}", "--server-side=true", "--force-conflicts")
		cm, err = cms.Get(t.Context(), "keys", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data["a"] != "set" {
			t.Errorf("%s upgrade --force-conflicts: key a is %q, want the chart's value back", tool, cm.Data["a"])
		}
		assertOnlyHelmApplies(t, env, tool+" upgrade --force-conflicts")
	}
}
