package doctor

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// The preflight decides, as the API server would, whether a webhook that cannot answer is called
// for a request the operation makes; these tests give it webhooks whose rules, selectors and
// matchConditions leave the release's requests out, and the same webhooks once they take them
// in.

const (
	mutating   = "MutatingWebhookConfiguration"
	validating = "ValidatingWebhookConfiguration"
	// deadWebhookName is the name of the webhook in the configurations deadWebhook makes.
	deadWebhookName = "dead.berth.example.com"
	// refusal is what the error of an operation the preflight stopped says.
	refusal = "would be blocked; nothing was changed"
)

// deadWebhook creates (or, called again in the same test, replaces) a webhook configuration of
// kind holding one webhook, failurePolicy Fail, whose service does not exist, and deletes it when
// the test ends. spec is the rest of the webhook (rules, selectors, matchPolicy,
// matchConditions) as YAML at the webhook's level; without a namespaceSelector of its own, the
// webhook selects only the test's namespace. It returns the configuration's name.
func deadWebhook(t *testing.T, env *testenv.Env, kind, spec string) string {
	t.Helper()
	name := "dead-" + env.Namespace
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: admissionregistration.k8s.io/v1\nkind: %s\nmetadata: {name: %s}\nwebhooks:\n- name: %s\n", kind, name, deadWebhookName)
	fmt.Fprintf(&b, "  admissionReviewVersions: [v1]\n  sideEffects: None\n  failurePolicy: Fail\n  timeoutSeconds: 5\n")
	fmt.Fprintf(&b, "  clientConfig: {service: {namespace: %s, name: nobody-home}}\n", env.Namespace)
	if !strings.Contains(spec, "namespaceSelector:") {
		fmt.Fprintf(&b, "  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}\n", env.Namespace)
	}
	for line := range strings.SplitSeq(strings.Trim(spec, "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	env.Apply(t, b.String())
	t.Cleanup(func() {
		ctx := context.Background()
		reg := env.Client.AdmissionregistrationV1()
		if kind == mutating {
			_ = reg.MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		} else {
			_ = reg.ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		}
	})
	return name
}

// webChart writes a chart holding one Deployment named after the release (1 replica, image
// example.com/web:1) whose Pods are labelled app: <release> and podLabels, YAML lines such as
// `sidecar.istio.io/inject: "true"`.
func webChart(t *testing.T, podLabels ...string) string {
	t.Helper()
	var labels strings.Builder
	for _, l := range podLabels {
		labels.WriteString("\n        " + l)
	}
	return berthtest.WriteChart(t, "web", map[string]string{"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: 1
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels:
        app: {{ .Release.Name }}` + labels.String() + `
    spec:
      containers: [{name: web, image: "example.com/web:1"}]
`})
}

// assertRefused checks that an operation was stopped by the preflight: its error names each of
// names (the webhook configuration, what it intercepts) and its exit code is ExitBlocked.
func assertRefused(t *testing.T, what string, err error, names ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s was not stopped by the preflight", what)
	}
	for _, n := range append([]string{refusal}, names...) {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("%s: the error does not say %q:\n%v", what, n, err)
		}
	}
	if code := cli.ExitCode(err); code != cli.ExitBlocked {
		t.Errorf("%s: exit code %d, want %d", what, code, cli.ExitBlocked)
	}
}

// assertInstallRefused runs berth install name chart, which the preflight must stop naming
// names, and checks that it left nothing: no Deployment name, no release record.
func assertInstallRefused(t *testing.T, env *testenv.Env, name, chart string, names ...string) {
	t.Helper()
	_, _, err := berthtest.Berth(t, env, "install", name, chart)
	assertRefused(t, "install of "+name, err, names...)
	berthtest.AssertNoObject(t, env, "apps/v1", "Deployment", name)
	berthtest.AssertNotRecorded(t, env, name)
}

// assertDeployed checks that the last revision of release name is revision, deployed.
func assertDeployed(t *testing.T, env *testenv.Env, name string, revision int) {
	t.Helper()
	if rel := berthtest.LastRecord(t, env, name); rel.Version != revision || rel.Info.Status != release.StatusDeployed {
		t.Errorf("release %s: revision %d %s, want %d deployed", name, rel.Version, rel.Info.Status, revision)
	}
}

// podsOf is how the preflight names the Pods a Deployment of the test's namespace makes.
func podsOf(env *testenv.Env, deployment string) string {
	return "Deployment.apps/" + env.Namespace + "/" + deployment + "'s Pods"
}

// TestPreflightObjectSelector: a dead webhook on CREATE of Pods labelled
// sidecar.istio.io/inject=true does not stop a release whose Pods lack the label; a release
// whose pod template has it is stopped, and so is an upgrade that adds it.
func TestPreflightObjectSelector(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	name := deadWebhook(t, env, mutating, `
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
objectSelector: {matchLabels: {sidecar.istio.io/inject: "true"}}`)
	plain, injected := webChart(t), webChart(t, `sidecar.istio.io/inject: "true"`)

	berthtest.MustBerth(t, env, "install", "web", plain)
	assertDeployed(t, env, "web", 1)

	assertInstallRefused(t, env, "injected", injected, name, "CREATE of "+podsOf(env, "injected"))

	// Labelling the template changes the Deployment's spec: its controller makes new Pods, with
	// the label.
	_, _, err := berthtest.Berth(t, env, "upgrade", "web", injected)
	assertRefused(t, "upgrade of web that labels its Pods", err, name, "CREATE of "+podsOf(env, "web"))
	assertDeployed(t, env, "web", 1)
}

// TestPreflightNamespaceSelector: a dead webhook on CREATE of Pods in namespaces with a label
// does not stop an install in a namespace without it; once the namespace has the label, an
// install is stopped.
func TestPreflightNamespaceSelector(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	label := "berth-test-inject-" + berthtest.Suffix(env) // no other test's namespace has it
	name := deadWebhook(t, env, mutating, fmt.Sprintf(`
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
namespaceSelector: {matchLabels: {%s: enabled}}`, label))
	chart := webChart(t)

	berthtest.MustBerth(t, env, "install", "web", chart)
	assertDeployed(t, env, "web", 1)

	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"enabled"}}}`, label)
	if _, err := env.Client.CoreV1().Namespaces().Patch(t.Context(), env.Namespace, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	assertInstallRefused(t, env, "second", chart, name, "CREATE of "+podsOf(env, "second"))
}

// TestPreflightRulesOfAnotherResource: a dead webhook on CREATE of Services does not stop a
// release that has none.
func TestPreflightRulesOfAnotherResource(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	deadWebhook(t, env, validating, `
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [services]}]`)
	berthtest.MustBerth(t, env, "install", "web", webChart(t))
	assertDeployed(t, env, "web", 1)
}

// TestPreflightSecretsWebhook: a chart without a Secret still writes Secrets, its release's records
// and journal. A dead webhook on CREATE of every Secret stops the install before it starts, naming
// the record; one whose objectSelector leaves Helm's and berth's own Secrets alone does not.
func TestPreflightSecretsWebhook(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	deadWebhook(t, env, validating, `
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [secrets]}]
objectSelector: {matchExpressions: [{key: owner, operator: NotIn, values: [helm, berth]}]}`)
	berthtest.MustBerth(t, env, "install", "web", webChart(t))
	assertDeployed(t, env, "web", 1)

	deadWebhook(t, env, validating, `
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [secrets]}]`)
	assertInstallRefused(t, env, "other", webChart(t), "CREATE of the record of revision 1 (Secret/"+env.Namespace+"/sh.helm.release.v1.other.v1)")
}

// TestPreflightMatchPolicyEquivalent: a dead webhook on CREATE of v2 Widgets is called, under
// matchPolicy Equivalent, for a v1 Widget too (the API server converts it); under matchPolicy
// Exact it is not.
func TestPreflightMatchPolicyEquivalent(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	group := strings.ReplaceAll(env.Namespace, "-", "") + ".example.com"
	crd := "widgets." + group
	env.Apply(t, fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %s}
spec:
  group: %s
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  conversion: {strategy: None}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, crd, group))
	crds := env.Resource(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition")
	t.Cleanup(func() { _ = crds.Delete(context.Background(), crd, metav1.DeleteOptions{}) })
	eventually(t, "the CRD is Established", func(ctx context.Context) (bool, error) {
		c, err := crds.Get(ctx, crd, metav1.GetOptions{})
		return err == nil && hasCondition(c, "Established", "True"), nil
	})
	chart := berthtest.WriteChart(t, "gadget", map[string]string{"templates/widget.yaml": fmt.Sprintf(
		"apiVersion: %s/v1\nkind: Widget\nmetadata:\n  name: gadget\nspec: {size: 3}\n", group)})
	rule := fmt.Sprintf(`rules: [{operations: [CREATE], apiGroups: [%q], apiVersions: [v2], resources: [widgets]}]`, group)

	name := deadWebhook(t, env, validating, rule+"\nmatchPolicy: Equivalent")
	_, _, err := berthtest.Berth(t, env, "install", "gadget", chart)
	assertRefused(t, "install of a v1 Widget under matchPolicy Equivalent", err, name, "CREATE of Widget."+group+"/"+env.Namespace+"/gadget")
	berthtest.AssertNoObject(t, env, group+"/v1", "Widget", "gadget")
	berthtest.AssertNotRecorded(t, env, "gadget")

	deadWebhook(t, env, validating, rule+"\nmatchPolicy: Exact")
	berthtest.MustBerth(t, env, "install", "gadget", chart)
	assertDeployed(t, env, "gadget", 1)
}

// TestPreflightMatchConditionExcludes: a dead webhook on CREATE of Deployments whose
// matchCondition leaves out the one named web does not stop the release that makes it.
func TestPreflightMatchConditionExcludes(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	deadWebhook(t, env, validating, `
rules: [{operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments]}]
matchConditions: [{name: not-web, expression: "object.metadata.name != 'web'"}]`)
	berthtest.MustBerth(t, env, "install", "web", webChart(t))
	assertDeployed(t, env, "web", 1)
}

// TestPreflightMatchConditionUndecided: a dead webhook on CREATE of Pods whose matchCondition
// asks the authorizer cannot be decided before the request: the install goes on, with a
// warning that names the webhook.
func TestPreflightMatchConditionUndecided(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	name := deadWebhook(t, env, mutating, `
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
matchConditions: [{name: may-create-pods, expression: "authorizer.group('').resource('pods').check('create').allowed()"}]`)
	_, stderr := berthtest.MustBerth(t, env, "install", "web", webChart(t))
	assertDeployed(t, env, "web", 1)
	if w := warningAbout(stderr, name); !strings.Contains(w, deadWebhookName) {
		t.Errorf("install with a webhook whose matchCondition cannot be decided: no warning naming %s and %s; stderr:\n%s", name, deadWebhookName, stderr)
	}
}

// TestPreflightUninstallObjectSelector: a dead webhook on DELETE of Deployments labelled
// team=other does not stop the uninstall of a release whose Deployment is not.
func TestPreflightUninstallObjectSelector(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	berthtest.MustBerth(t, env, "install", "web", webChart(t))
	deadWebhook(t, env, validating, `
rules: [{operations: [DELETE], apiGroups: [apps], apiVersions: [v1], resources: [deployments]}]
objectSelector: {matchLabels: {team: other}}`)
	berthtest.MustBerth(t, env, "uninstall", "web")
	deployments := env.Client.AppsV1().Deployments(env.Namespace)
	eventually(t, "Deployment web is gone", func(ctx context.Context) (bool, error) {
		_, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	berthtest.AssertNotRecorded(t, env, "web")
}

// deadAPIService is an APIService of group's v1alpha1 served by Service missing of namespace,
// which does not exist.
func deadAPIService(group, namespace string) string {
	return fmt.Sprintf(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.%s}
spec:
  group: %s
  version: v1alpha1
  groupPriorityMinimum: 100
  versionPriority: 10
  insecureSkipTLSVerify: true
  service: {namespace: %s, name: missing}
`, group, group, namespace)
}

// awaitAPIServiceVerdict waits until the API server has said whether APIService name is
// Available, and checks that it is not; it deletes the APIService when the test ends.
func awaitAPIServiceVerdict(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	apiServices := env.Resource(t, "apiregistration.k8s.io/v1", "APIService")
	t.Cleanup(func() { _ = apiServices.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	eventually(t, "APIService "+name+" has an Available condition", func(ctx context.Context) (bool, error) {
		a, err := apiServices.Get(ctx, name, metav1.GetOptions{})
		return err == nil && (hasCondition(a, "Available", "True") || hasCondition(a, "Available", "False")), nil
	})
	a, err := apiServices.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasCondition(a, "Available", "False") {
		t.Fatalf("APIService %s is Available, want it not", name)
	}
}

// hasCondition reports whether obj's status has a condition of type typ with status.
func hasCondition(obj *unstructured.Unstructured, typ, status string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		c, _ := c.(map[string]any)
		if c["type"] == typ && c["status"] == status {
			return true
		}
	}
	return false
}

// settingsChart writes a chart holding a ConfigMap named after the release, and extra templates.
func settingsChart(t *testing.T, name string, templates map[string]string) string {
	t.Helper()
	files := map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata: {a: b}\n"}
	for k, v := range templates {
		files[k] = v
	}
	return berthtest.WriteChart(t, name, files)
}

// TestPreflightOwnAPIServiceUnavailable: a release whose own APIService is not Available can be
// upgraded (that is how it is repaired), without a word about it; another release, which makes
// no request of its group, is only warned. (Cluster-wide, so not in parallel with the other
// tests.)
func TestPreflightOwnAPIServiceUnavailable(t *testing.T) {
	env := testenv.New(t)
	group := strings.ReplaceAll(env.Namespace, "-", "") + ".example.com"
	apiService := "v1alpha1." + group
	chart := settingsChart(t, "api", map[string]string{
		"templates/apiservice.yaml": strings.ReplaceAll(deadAPIService(group, "NAMESPACE"), "NAMESPACE", "{{ .Release.Namespace }}"),
	})
	berthtest.MustBerth(t, env, "install", "api", chart)
	awaitAPIServiceVerdict(t, env, apiService)

	_, stderr := berthtest.MustBerth(t, env, "upgrade", "api", chart)
	assertDeployed(t, env, "api", 2)
	if w := warningAbout(stderr, apiService); w != "" {
		t.Errorf("upgrade of the release that owns APIService %s warns of it: %s", apiService, w)
	}

	_, stderr = berthtest.MustBerth(t, env, "install", "other", settingsChart(t, "other", nil))
	assertDeployed(t, env, "other", 1)
	if warningAbout(stderr, apiService) == "" {
		t.Errorf("install of another release: no warning about APIService %s; stderr:\n%s", apiService, stderr)
	}
}

// warningAbout returns the first line of stderr that is a warning naming name, "" when there is
// none.
func warningAbout(stderr, name string) string {
	for line := range strings.SplitSeq(stderr, "\n") {
		if strings.HasPrefix(line, "warning:") && strings.Contains(line, name) {
			return line
		}
	}
	return ""
}

// TestPreflightObjectsOfUnavailableAPIService: an install of a chart holding an object of a
// group whose APIService is not Available is refused, names the group and version, and leaves
// nothing. (Cluster-wide, so not in parallel with the other tests.)
func TestPreflightObjectsOfUnavailableAPIService(t *testing.T) {
	env := testenv.New(t)
	group := strings.ReplaceAll(env.Namespace, "-", "") + ".example.com"
	apiService := "v1alpha1." + group
	env.Apply(t, deadAPIService(group, env.Namespace))
	awaitAPIServiceVerdict(t, env, apiService)

	chart := settingsChart(t, "things", map[string]string{
		"templates/thing.yaml": fmt.Sprintf("apiVersion: %s/v1alpha1\nkind: Thing\nmetadata:\n  name: one\n", group),
	})
	_, _, err := berthtest.Berth(t, env, "install", "things", chart)
	if code := cli.ExitCode(err); code != cli.ExitBlocked {
		t.Fatalf("install of a Thing of an APIService that is not Available: exit %d (%v), want %d", code, err, cli.ExitBlocked)
	}
	for _, want := range []string{group + "/v1alpha1", "APIService " + apiService, "not Available"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not name %q: %v", want, err)
		}
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "things")
	berthtest.AssertNotRecorded(t, env, "things")
}

// TestDoctorDescribesWebhookSelectors: berth doctor of the whole cluster describes a dead
// webhook in its selectors' terms; berth doctor of a release whose Pods it does not select
// says nothing of it, and of a release whose Pods it selects names them.
func TestDoctorDescribesWebhookSelectors(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	name := deadWebhook(t, env, mutating, `
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
objectSelector: {matchLabels: {sidecar.istio.io/inject: "true"}}`)

	rep, code := runDoctor(t, env)
	got := find(rep, "webhook", name)
	if len(got) != 1 || got[0].Severity != doctor.Blocker || !strings.Contains(got[0].Breaks, "labelled sidecar.istio.io/inject=true") ||
		!strings.Contains(got[0].Breaks, "in namespaces labelled kubernetes.io/metadata.name="+env.Namespace) {
		t.Fatalf("findings of berth doctor about webhook configuration %s: %+v", name, got)
	}
	if code != cli.ExitDoctorBlockers {
		t.Errorf("exit code %d, want %d", code, cli.ExitDoctorBlockers)
	}

	berthtest.MustBerth(t, env, "install", "web", webChart(t))
	if rep, _ := runDoctor(t, env, "-n", env.Namespace, "--release", "web"); len(find(rep, "webhook", name)) != 0 {
		t.Errorf("berth doctor --release web reports the webhook, which never selects its Pods: %+v", find(rep, "webhook", name))
	}

	// Installed past the preflight, a release whose Pods have the label is one the webhook blocks.
	berthtest.MustBerth(t, env, "install", "injected", webChart(t, `sidecar.istio.io/inject: "true"`), "--skip-preflight")
	rep, _ = runDoctor(t, env, "-n", env.Namespace, "--release", "injected")
	if got := find(rep, "webhook", name); len(got) != 1 || got[0].Severity != doctor.Blocker || !strings.Contains(got[0].Breaks, podsOf(env, "injected")) {
		t.Errorf("berth doctor --release injected about webhook configuration %s: %+v", name, got)
	}
}
