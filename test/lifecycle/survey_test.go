package lifecycle

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// reads returns berth's requests since mark that read or watch objects of resource (verb
// resource/name, or verb resource for a list or a watch), and all of berth's requests by kind.
func reads(t *testing.T, env *testenv.Env, mark testenv.AuditMark, resources ...string) (got []string, all map[string]int) {
	t.Helper()
	all = map[string]int{}
	for _, ev := range env.AuditEvents(t, mark) {
		if ev.UserAgent != berthAgent {
			continue
		}
		all[ev.String()]++
		if !slices.Contains(resources, ev.Resource) {
			continue
		}
		switch ev.Verb {
		case "get", "list", "watch":
			got = append(got, ev.String())
		}
	}
	return got, all
}

// TestInstallReadsNoObjectItCreates installs a release of a ConfigMap and a Deployment, with
// --wait: neither is read before the install (their dry runs show they do not exist), and the
// ConfigMap, ready as its apply answers it, is not watched while the Deployment is waited for.
// Nine ConfigMaps, as many as make a read list them, are not listed either.
func TestInstallReadsNoObjectItCreates(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	files := map[string]string{
		"templates/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: v}\n",
		"templates/web.yaml":      berthtest.StartingDeployment("web", "0s"),
	}
	chart := berthtest.WriteChart(t, "fresh", files)
	mark := env.AuditMark(t)
	berthtest.MustBerth(t, env, "install", "web", chart, "--wait")
	got, all := reads(t, env, mark, "configmaps", "deployments")
	t.Logf("berth's requests: %v", all)
	for _, r := range got {
		if strings.Contains(r, "configmaps") || r == "get deployments/web" {
			t.Errorf("berth read %s, want no read of the objects it created but the wait for the Deployment", r)
		}
	}
	if !slices.ContainsFunc(got, func(r string) bool { return strings.HasPrefix(r, "watch deployments") }) {
		t.Errorf("berth made no watch of Deployments: %v, want the Deployment waited for", got)
	}
	assertDeployed(t, env, "web")

	many := map[string]string{}
	for i := range 9 {
		many[fmt.Sprintf("templates/cm%d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\n", i)
	}
	mark = env.AuditMark(t)
	berthtest.MustBerth(t, env, "install", "many", berthtest.WriteChart(t, "many", many), "--wait")
	got, all = reads(t, env, mark, "configmaps")
	t.Logf("berth's requests: %v", all)
	if len(got) != 0 {
		t.Errorf("berth read %v, want no read of the ConfigMaps it created", got)
	}
	if n := len(assertDeployed(t, env, "many")); n != 9 {
		t.Errorf("release many has %d objects, want 9", n)
	}
}

// TestInstallAdoptsWhatHelmCreated installs a release over a ConfigMap that Helm created for it
// with a client-side apply (its ownership metadata names the release, its fields are Helm's
// manager's, operation Update): the install reads it, as its dry run shows it exists, and adopts
// Helm's fields, so that none is left to Helm's client-side apply.
func TestInstallAdoptsWhatHelmCreated(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	cms := env.Resource(t, "v1", "ConfigMap")
	obj := &unstructured.Unstructured{}
	j, err := yaml.YAMLToJSON([]byte(fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: %s
  labels: {app.kubernetes.io/managed-by: Helm}
  annotations: {meta.helm.sh/release-name: web, meta.helm.sh/release-namespace: %s}
data: {k: v, old: x}
`, env.Namespace, env.Namespace)))
	if err == nil {
		err = obj.UnmarshalJSON(j)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(t.Context(), obj, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		t.Fatal(err)
	}
	chart := berthtest.WriteChart(t, "adopt", map[string]string{
		"templates/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: v}\n",
	})
	berthtest.MustBerth(t, env, "install", "web", chart)
	live, err := cms.Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	managers := map[string]metav1.ManagedFieldsOperationType{}
	for _, e := range live.GetManagedFields() {
		if e.Manager == "helm" && e.Operation == metav1.ManagedFieldsOperationUpdate {
			t.Errorf("ConfigMap settings still has fields of Helm's client-side apply: %v", live.GetManagedFields())
		}
		managers[e.Manager] = e.Operation
	}
	t.Logf("managers after the install: %v", managers)
	data := live.Object["data"].(map[string]any)
	if keys := slices.Sorted(maps.Keys(data)); !slices.Equal(keys, []string{"k"}) {
		t.Errorf("ConfigMap settings has data %v, want only k: the field Helm set and the chart dropped is removed", data)
	}
	assertHistory(t, env, "web", revision{1, "deployed", "Install complete"})
}
