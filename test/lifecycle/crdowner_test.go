package lifecycle

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// ownConfigMap is a ConfigMap named after its release.
const ownConfigMap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n"

// TestCreateReplaceLeavesAnotherReleasesCRD: a CRD that another release owns (it is among that
// release's templates) is not rewritten by a release whose crds/ holds it, even with --crds
// create-replace: the operation is refused as for any object another release owns, and goes
// through with --take-ownership.
func TestCreateReplaceLeavesAnotherReleasesCRD(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	group := "owned-" + berthtest.Suffix(env) + ".example.com"
	name := "widgets." + group
	t.Cleanup(func() { deleteCRDs(t, env, name) })
	owner := berthtest.WriteChart(t, "owner", map[string]string{"templates/crd.yaml": widgetCRD(group, "Namespaced", []string{"v1"}, "size")})
	other := berthtest.WriteChart(t, "other", map[string]string{
		"crds/widget.yaml":  widgetCRD(group, "Namespaced", []string{"v1"}, "size", "color"),
		"templates/cm.yaml": ownConfigMap,
	})
	berthtest.MustBerth(t, env, "install", "owner", owner, "--wait")

	_, stderr, err := berthtest.Berth(t, env, "upgrade", "--install", "other", other, "--crds", "create-replace", "--wait")
	if err == nil || !strings.Contains(stderr, name) || !strings.Contains(stderr, `belongs to release "owner"`) || !strings.Contains(stderr, "--take-ownership") {
		t.Fatalf("install with --crds create-replace of a CRD release owner owns: %v, stderr:\n%s\nwant it refused, naming the CRD and its owner", err, stderr)
	}
	if got := specFields(liveCRD(t, env, name)); !slices.Equal(got, []string{"size"}) {
		t.Errorf("CRD %s has spec fields %v after the refused install, want [size]", name, got)
	}

	berthtest.MustBerth(t, env, "upgrade", "--install", "other", other, "--crds", "create-replace", "--take-ownership", "--wait")
	if got := specFields(liveCRD(t, env, name)); !slices.Equal(got, []string{"color", "size"}) {
		t.Errorf("CRD %s has spec fields %v after the install with --take-ownership, want [color size]", name, got)
	}
}

// widgetChart is a chart whose crds/ defines Widget of group and whose templates hold a Widget
// named after the release.
func widgetChart(t *testing.T, group string) string {
	return berthtest.WriteChart(t, "gadget", map[string]string{
		"crds/widget.yaml":      widgetCRD(group, "Namespaced", []string{"v1"}, "size"),
		"templates/widget.yaml": "apiVersion: " + group + "/v1\nkind: Widget\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  size: \"1\"\n",
	})
}

// TestExistingCRDNotServedIsWaitedFor: a CRD of crds/ that exists and is not served is not
// taken as there: an install waits for it as for one it creates. One whose names the API server
// does not accept (another CRD of its group has its list kind) fails the install, naming it,
// where the install would have gone on to apply a Widget of an unknown kind; once the other CRD
// is gone it is served, and the install succeeds.
func TestExistingCRDNotServedIsWaitedFor(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	group := "late-" + berthtest.Suffix(env) + ".example.com"
	name, blocker := "widgets."+group, "blockers."+group
	t.Cleanup(func() { deleteCRDs(t, env, name, blocker) })
	crds := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	create := func(manifest string) {
		t.Helper()
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal([]byte(manifest), &crd); err != nil {
			t.Fatal(err)
		}
		if _, err := crds.Create(t.Context(), &crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	condition := func(name string, typ apiextensionsv1.CustomResourceDefinitionConditionType, status apiextensionsv1.ConditionStatus) {
		t.Helper()
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == typ && c.Status == status
			}), nil
		})
		if err != nil {
			t.Fatalf("wait until CRD %s is %s=%s: %v", name, typ, status, err)
		}
	}
	blocking := strings.NewReplacer("widgets."+group, blocker, "kind: Widget,", "kind: Blocker,", "plural: widgets", "plural: blockers", "singular: widget", "singular: blocker").
		Replace(widgetCRD(group, "Namespaced", []string{"v1"}, "size"))
	create(blocking)
	condition(blocker, apiextensionsv1.Established, apiextensionsv1.ConditionTrue)
	create(widgetCRD(group, "Namespaced", []string{"v1"}, "size"))
	condition(name, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse)

	chart := widgetChart(t, group)
	_, stderr, err := berthtest.Berth(t, env, "install", "first", chart, "--timeout", "30s")
	if err == nil || !strings.Contains(stderr, name) || !strings.Contains(stderr, "not served yet") {
		t.Fatalf("install while CRD %s exists and is not served: %v, stderr:\n%s\nwant it to fail naming the CRD", name, err, stderr)
	}

	deleteCRDs(t, env, blocker)
	condition(name, apiextensionsv1.Established, apiextensionsv1.ConditionTrue)
	berthtest.MustBerth(t, env, "upgrade", "--install", "first", chart, "--wait")
}

// TestTwoInstallsOfACRDChartAtOnce: two releases of one chart whose crds/ defines the kind of
// one of its objects, installed at once, both succeed: the one that finds the CRD just created
// by the other waits until it is served.
func TestTwoInstallsOfACRDChartAtOnce(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	group := "twice-" + berthtest.Suffix(env) + ".example.com"
	t.Cleanup(func() { deleteCRDs(t, env, "widgets."+group) })
	chart := widgetChart(t, group)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	stderrs := make([]string, 2)
	for i, name := range []string{"one", "two"} {
		wg.Go(func() { _, stderrs[i], errs[i] = berthtest.Berth(t, env, "install", name, chart, "--wait") })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("install %d of two at once: %v\nstderr:\n%s", i+1, err, stderrs[i])
		}
	}
}
