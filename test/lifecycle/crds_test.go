package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// widgetCRD is the CRD of Kind Widget in group, of scope, serving versions (the last stored),
// each with the spec fields given.
func widgetCRD(group, scope string, versions []string, fields ...string) string {
	return berthtest.CRD("Widget", group, scope, versions, fields...)
}

// liveCRD returns the live CustomResourceDefinition name.
func liveCRD(t *testing.T, env *testenv.Env, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

// specFields are the fields of the spec of the first version of crd, sorted.
func specFields(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	if s := crd.Spec.Versions[0].Schema; s != nil && s.OpenAPIV3Schema != nil {
		for f := range s.OpenAPIV3Schema.Properties["spec"].Properties {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// TestCRDsAreUpdatedWithCreateReplace upgrades a release to a chart whose CRD gains a field: as
// in Helm, a plain upgrade leaves the CRD alone; with --crds create-replace, berth diff shows
// the change and the upgrade makes it, updating the CRD in place.
func TestCRDsAreUpdatedWithCreateReplace(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	group := "gain-" + berthtest.Suffix(env) + ".example.com"
	name := "widgets." + group
	t.Cleanup(func() { deleteCRDs(t, env, name) })
	v1 := berthtest.WriteChart(t, "gadget", map[string]string{
		"crds/widget.yaml":  widgetCRD(group, "Namespaced", []string{"v1"}, "size"),
		"templates/cm.yaml": goodTemplate,
	})
	v2 := berthtest.WriteChart(t, "gadget", map[string]string{
		"crds/widget.yaml":  widgetCRD(group, "Namespaced", []string{"v1"}, "size", "color"),
		"templates/cm.yaml": goodTemplate,
	})

	berthtest.MustBerth(t, env, "install", "gadget", v1, "--wait")
	installed := liveCRD(t, env, name)
	if got := specFields(installed); !slices.Equal(got, []string{"size"}) {
		t.Fatalf("installed CRD %s has spec fields %v, want [size]", name, got)
	}

	berthtest.MustBerth(t, env, "upgrade", "gadget", v2, "--wait")
	if got := specFields(liveCRD(t, env, name)); !slices.Equal(got, []string{"size"}) {
		t.Errorf("after an upgrade without --crds, CRD %s has spec fields %v, want [size]: crds/ is left alone", name, got)
	}

	out, _ := berthtest.MustBerth(t, env, "diff", "upgrade", "gadget", v2, "--crds", "create-replace")
	for _, want := range []string{"CustomResourceDefinition.apiextensions.k8s.io/" + name, "+", "color", "1 configured"} {
		if !strings.Contains(out, want) {
			t.Errorf("berth diff upgrade --crds create-replace does not show %q:\n%s", want, out)
		}
	}

	berthtest.MustBerth(t, env, "upgrade", "gadget", v2, "--crds", "create-replace", "--wait")
	updated := liveCRD(t, env, name)
	if got := specFields(updated); !slices.Equal(got, []string{"color", "size"}) {
		t.Errorf("after an upgrade with --crds create-replace, CRD %s has spec fields %v, want [color size]", name, got)
	}
	if updated.UID != installed.UID {
		t.Errorf("CRD %s has UID %s, want it updated in place (UID %s)", name, updated.UID, installed.UID)
	}
	if !established(updated) {
		t.Errorf("CRD %s is not Established after the upgrade that waited for it", name)
	}
}

// TestCreateReplaceRemovesAFieldFromACRDHelmCreated: Helm with client-side apply (as Helm 3)
// creates the CRDs of crds/ with a plain create, whose fields its field manager owns as an
// update; berth's --crds create-replace adopts them, so a field that left crds/ (a label here)
// leaves the CRD. (A CRD Helm v4 applied server-side is under the field manager berth shares:
// nothing to adopt.)
func TestCreateReplaceRemovesAFieldFromACRDHelmCreated(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	group := "drop-" + berthtest.Suffix(env) + ".example.com"
	name := "widgets." + group
	t.Cleanup(func() { deleteCRDs(t, env, name) })
	crd := widgetCRD(group, "Namespaced", []string{"v1"}, "size")
	labelled := strings.Replace(crd, "  name: "+name+"\n", "  name: "+name+"\n  labels: {tier: gold, team: web}\n", 1)
	if labelled == crd {
		t.Fatal("the test's CRD has no name line to label")
	}
	v1 := berthtest.WriteChart(t, "gadget", map[string]string{"crds/widget.yaml": labelled, "templates/cm.yaml": goodTemplate})
	v2 := berthtest.WriteChart(t, "gadget", map[string]string{
		"crds/widget.yaml":  strings.Replace(labelled, "tier: gold, ", "", 1),
		"templates/cm.yaml": goodTemplate,
	})
	berthtest.MustHelm(t, env, "install", "gadget", v1, "--wait", "--server-side=false")
	installed := liveCRD(t, env, name)
	if installed.Labels["tier"] != "gold" {
		t.Fatalf("CRD %s as helm created it has labels %v, want tier gold", name, installed.Labels)
	}

	berthtest.MustBerth(t, env, "upgrade", "gadget", v2, "--crds", "create-replace", "--wait")
	updated := liveCRD(t, env, name)
	if _, ok := updated.Labels["tier"]; ok || updated.Labels["team"] != "web" {
		t.Errorf("after berth upgrade --crds create-replace, CRD %s has labels %v, want team web alone", name, updated.Labels)
	}
	if updated.UID != installed.UID {
		t.Errorf("CRD %s has UID %s, want it updated in place (UID %s)", name, updated.UID, installed.UID)
	}
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
		return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
	})
}

// TestCRDUpdatesThatLoseObjectsAreRefused upgrades with --crds create-replace to a chart whose
// CRD drops its stored version, or changes its scope: berth refuses before anything changes,
// naming the CRD and what it refuses.
func TestCRDUpdatesThatLoseObjectsAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		before func(group string) string
		after  func(group string) string
		want   []string
	}{{
		name:   "stored version dropped",
		before: func(g string) string { return widgetCRD(g, "Namespaced", []string{"v1alpha1"}, "size") },
		after:  func(g string) string { return widgetCRD(g, "Namespaced", []string{"v1"}, "size") },
		want:   []string{"drops version v1alpha1", "status.storedVersions"},
	}, {
		name:   "scope changed",
		before: func(g string) string { return widgetCRD(g, "Namespaced", []string{"v1"}, "size") },
		after:  func(g string) string { return widgetCRD(g, "Cluster", []string{"v1"}, "size") },
		want:   []string{"spec.scope", "Namespaced", "Cluster"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t)
			group := "lose-" + berthtest.Suffix(env) + ".example.com"
			name := "widgets." + group
			t.Cleanup(func() { deleteCRDs(t, env, name) })
			v1 := berthtest.WriteChart(t, "gadget", map[string]string{
				"crds/widget.yaml":  tc.before(group),
				"templates/cm.yaml": goodTemplate,
			})
			v2 := berthtest.WriteChart(t, "gadget", map[string]string{
				"crds/widget.yaml":  tc.after(group),
				"templates/cm.yaml": strings.Replace(goodTemplate, "blue", "red", 1),
			})
			berthtest.MustBerth(t, env, "install", "gadget", v1, "--wait")
			before := liveCRD(t, env, name)

			_, _, err := berthtest.Berth(t, env, "upgrade", "gadget", v2, "--crds", "create-replace", "--wait")
			if err == nil {
				t.Fatal("upgrade succeeded, want the CRD's update refused")
			}
			for _, want := range append([]string{"CustomResourceDefinition.apiextensions.k8s.io/" + name, "nothing was changed"}, tc.want...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q:\n%v", want, err)
				}
			}
			// Nothing changed: not the CRD, not the release's objects, not its record.
			if after := liveCRD(t, env, name); after.ResourceVersion != before.ResourceVersion {
				t.Errorf("CRD %s changed (resourceVersion %s, was %s)", name, after.ResourceVersion, before.ResourceVersion)
			}
			cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "good", metav1.GetOptions{})
			if err != nil || cm.Data["color"] != "blue" {
				t.Errorf("ConfigMap good: %v %v, want it unchanged (color blue)", cm.Data, err)
			}
			if rec := berthtest.LastRecord(t, env, "gadget"); rec.Version != 1 {
				t.Errorf("last record is revision %d (%s), want revision 1 alone", rec.Version, rec.Info.Status)
			}
		})
	}
}

// TestUpgradeAddingACRDNamesTheFlag upgrades a release to a chart whose crds/ adds a CRD, with a
// custom resource of its kind: an upgrade leaves crds/ alone, as Helm's does, so the upgrade is
// refused before anything changes, naming the CRD and --crds create; with it, the CRD is created
// and the custom resource applied.
func TestUpgradeAddingACRDNamesTheFlag(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	group := "added-" + berthtest.Suffix(env) + ".example.com"
	name := "widgets." + group
	t.Cleanup(func() { deleteCRDs(t, env, name) })
	v1 := berthtest.WriteChart(t, "gadget", map[string]string{"templates/cm.yaml": goodTemplate})
	v2 := berthtest.WriteChart(t, "gadget", map[string]string{
		"crds/widget.yaml":      widgetCRD(group, "Namespaced", []string{"v1"}, "size"),
		"templates/cm.yaml":     goodTemplate,
		"templates/widget.yaml": fmt.Sprintf("apiVersion: %s/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: big}\n", group),
	})
	berthtest.MustBerth(t, env, "install", "gadget", v1)

	_, stderr, err := berthtest.Berth(t, env, "upgrade", "gadget", v2)
	if err == nil {
		t.Fatal("upgrade to a chart whose crds/ adds the CRD of one of its objects succeeded without --crds")
	}
	for _, want := range []string{name, "--crds create"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the refused upgrade does not name %q:\n%s", want, stderr)
		}
	}
	berthtest.AssertNoObject(t, env, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name)

	berthtest.MustBerth(t, env, "upgrade", "gadget", v2, "--crds", "create", "--wait")
	if _, err := env.Resource(t, group+"/v1", "Widget").Get(t.Context(), "w", metav1.GetOptions{}); err != nil {
		t.Errorf("Widget w after the upgrade with --crds create: %v", err)
	}
}
