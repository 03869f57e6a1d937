package doctor

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/yaml"
)

// testMapper serves pods, configmaps, secrets, namespaces, deployments, replicasets and widgets of
// example.com in v1 and v2, one mapper a group version as discovery builds them.
func testMapper() meta.RESTMapper {
	var multi meta.MultiRESTMapper
	for _, k := range []struct {
		gvk   schema.GroupVersionKind
		scope meta.RESTScope
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}, meta.RESTScopeNamespace},
	} {
		m := meta.NewDefaultRESTMapper([]schema.GroupVersion{k.gvk.GroupVersion()})
		m.Add(k.gvk, k.scope)
		multi = append(multi, m)
	}
	return multi
}

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// pods is the request that creates the Pods of Deployment y.
func pods(t *testing.T, y string) Request {
	t.Helper()
	for _, q := range controlled(Request{Operation: admissionv1.Create, Object: obj(t, y)}) {
		if q.Object.GetKind() == "Pod" {
			return q
		}
	}
	t.Fatal("no Pods")
	return Request{}
}

func hook(t *testing.T, y string) admissionv1.ValidatingWebhook {
	t.Helper()
	var w admissionv1.ValidatingWebhook
	if err := yaml.Unmarshal([]byte(y), &w); err != nil {
		t.Fatal(err)
	}
	return w
}

const (
	podCreates = `
name: object.sidecar-injector.istio.io
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
`
	istioNamespaces = `
namespaceSelector:
  matchExpressions:
  - {key: istio-injection, operator: DoesNotExist}
  - {key: istio.io/rev, operator: DoesNotExist}
`
	web = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: web}]}
`
	injectedWeb = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    metadata: {labels: {app: web, sidecar.istio.io/inject: "true"}}
    spec: {containers: [{name: web, image: web}]}
`
	settings = `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: shop, labels: {team: a}}}`
)

// TestGate: whether the API server calls a webhook for a request, as its own matchers decide.
func TestGate(t *testing.T) {
	tests := []struct {
		name    string
		webhook string
		ns      map[string]string // labels of namespace shop
		who     user.Info
		req     Request
		want    verdict
		why     string // part of why a verdict may be called
	}{
		{
			name: "no selectors: every Pod", webhook: podCreates,
			req: pods(t, web), want: called,
		},
		{
			name: "objectSelector excludes the template's labels", webhook: podCreates + `
objectSelector: {matchLabels: {sidecar.istio.io/inject: "true"}}`,
			req: pods(t, web), want: skipped,
		},
		{
			name: "objectSelector matches the template's labels", webhook: podCreates + `
objectSelector: {matchLabels: {sidecar.istio.io/inject: "true"}}`,
			req: pods(t, injectedWeb), want: called,
		},
		{
			name: "DoesNotExist: a namespace without the labels", webhook: podCreates + istioNamespaces,
			req: pods(t, web), want: called,
		},
		{
			name: "DoesNotExist: a namespace with one of them", webhook: podCreates + istioNamespaces,
			ns:  map[string]string{"istio-injection": "enabled"},
			req: pods(t, web), want: skipped,
		},
		{
			name: "NotIn matches a missing label", webhook: podCreates + `
namespaceSelector: {matchExpressions: [{key: env, operator: NotIn, values: [prod]}]}`,
			req: pods(t, web), want: called,
		},
		{
			name: "NotIn excludes the value", webhook: podCreates + `
namespaceSelector: {matchExpressions: [{key: env, operator: NotIn, values: [prod]}]}`,
			ns:  map[string]string{"env": "prod"},
			req: pods(t, web), want: skipped,
		},
		{
			name: "empty selectors select everything", webhook: podCreates + `
namespaceSelector: {}
objectSelector: {}`,
			req: pods(t, web), want: called,
		},
		{
			name: "the name label of the namespace", webhook: podCreates + `
namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: other}}`,
			req: pods(t, web), want: skipped,
		},
		{
			name: "a cluster-scoped object is never exempted by a namespaceSelector", webhook: `
rules: [{operations: [CREATE], apiGroups: ["*"], apiVersions: ["*"], resources: [clusterroles]}]
namespaceSelector: {matchLabels: {nothing: here}}`,
			req:  Request{Operation: admissionv1.Create, Object: obj(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: r}}`)},
			want: called,
		},
		{
			name: "a namespace is matched by its own labels", webhook: `
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [namespaces]}]
namespaceSelector: {matchLabels: {team: a}}`,
			req:  Request{Operation: admissionv1.Create, Object: obj(t, `{apiVersion: v1, kind: Namespace, metadata: {name: fresh, labels: {team: b}}}`)},
			want: skipped,
		},
		{
			name: "rules of another resource", webhook: `
rules: [{operations: ["*"], apiGroups: [""], apiVersions: [v1], resources: [secrets]}]`,
			req: Request{Operation: admissionv1.Create, Object: obj(t, settings)}, want: skipped,
		},
		{
			name: "rules of another operation", webhook: `
rules: [{operations: [DELETE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]`,
			req: Request{Operation: admissionv1.Update, Object: obj(t, settings)}, want: skipped,
		},
		{
			name: "a subresource rule does not match the resource", webhook: `
rules: [{operations: [UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps/status]}]`,
			req: Request{Operation: admissionv1.Update, Object: obj(t, settings)}, want: skipped,
		},
		{
			name: "Cluster scope does not match a namespaced object", webhook: `
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps], scope: Cluster}]`,
			req: Request{Operation: admissionv1.Create, Object: obj(t, settings)}, want: skipped,
		},
		{
			name: "objectSelector on update: the old labels match", webhook: `
rules: [{operations: [UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
objectSelector: {matchLabels: {team: b}}`,
			req: Request{Operation: admissionv1.Update, Object: obj(t, settings),
				Old: obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: shop, labels: {team: b}}}`)},
			want: called,
		},
		{
			name: "objectSelector on delete sees the object", webhook: `
rules: [{operations: [DELETE], apiGroups: [apps], apiVersions: [v1], resources: [deployments]}]
objectSelector: {matchLabels: {team: other}}`,
			req: Request{Operation: admissionv1.Delete, Object: obj(t, web)}, want: skipped,
		},
		{
			name: "matchPolicy Equivalent: another version of the resource", webhook: `
matchPolicy: Equivalent
rules: [{operations: [CREATE], apiGroups: [example.com], apiVersions: [v2], resources: [widgets]}]`,
			req:  Request{Operation: admissionv1.Create, Object: obj(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: shop}}`)},
			want: called,
		},
		{
			name: "matchPolicy Equivalent is the default", webhook: `
rules: [{operations: [CREATE], apiGroups: [example.com], apiVersions: [v2], resources: [widgets]}]`,
			req:  Request{Operation: admissionv1.Create, Object: obj(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: shop}}`)},
			want: called,
		},
		{
			name: "matchPolicy Exact: only the version named", webhook: `
matchPolicy: Exact
rules: [{operations: [CREATE], apiGroups: [example.com], apiVersions: [v2], resources: [widgets]}]`,
			req:  Request{Operation: admissionv1.Create, Object: obj(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: shop}}`)},
			want: skipped,
		},
		{
			name: "matchConditions exclude the request", webhook: `
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
matchConditions: [{name: not-settings, expression: "object.metadata.name != 'settings'"}]`,
			req: Request{Operation: admissionv1.Create, Object: obj(t, settings)}, want: skipped,
		},
		{
			name: "matchConditions hold", webhook: `
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
matchConditions: [{name: team-a, expression: "object.metadata.labels['team'] == 'a'"}]`,
			req: Request{Operation: admissionv1.Create, Object: obj(t, settings)}, want: called,
		},
		{
			name: "matchConditions on who makes the request, known", webhook: `
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
matchConditions: [{name: not-admin, expression: "request.userInfo.username != 'admin'"}]`,
			who: &user.DefaultInfo{Name: "admin"},
			req: Request{Operation: admissionv1.Create, Object: obj(t, settings)}, want: skipped,
		},
		{
			name: "matchConditions on who a controller runs as", webhook: podCreates + `
matchConditions: [{name: not-admin, expression: "request.userInfo.username != 'admin'"}]`,
			who:  &user.DefaultInfo{Name: "admin"},
			req:  pods(t, web),
			want: mayBeCalled, why: "who Deployment's controller runs as is not known",
		},
		{
			name: "matchConditions that ask the authorizer", webhook: `
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
matchConditions: [{name: can, expression: "authorizer.group('').resource('pods').check('create').allowed()"}]`,
			who: &user.DefaultInfo{Name: "admin"},
			req: Request{Operation: admissionv1.Create, Object: obj(t, settings)}, want: mayBeCalled, why: "could not be evaluated",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate(testMapper(), []*corev1.Namespace{asNamespace("shop", tt.ns)}, func() user.Info { return tt.who })
			h := accessor("config", false, hook(t, tt.webhook))
			got, why := g.calls(t.Context(), h, tt.req)
			if got != tt.want || !strings.Contains(why, tt.why) {
				t.Errorf("calls = %v (%s), want %v (%s)", got, why, tt.want, tt.why)
			}
		})
	}
}

// TestControlled: the requests a workload's controller makes, with the template's labels.
func TestControlled(t *testing.T) {
	got := WithControllers([]Request{{Operation: admissionv1.Create, Object: obj(t, injectedWeb)}})
	var subjects []string
	for _, q := range got {
		subjects = append(subjects, string(q.Operation)+" "+q.Subject()+" "+q.Object.GetLabels()["sidecar.istio.io/inject"])
	}
	want := []string{
		"CREATE Deployment.apps/shop/web ",
		"CREATE Deployment.apps/shop/web's ReplicaSets true",
		"CREATE Deployment.apps/shop/web's Pods true",
	}
	if strings.Join(subjects, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(subjects, "\n"), strings.Join(want, "\n"))
	}
	if n := len(controlled(Request{Operation: admissionv1.Update, Object: obj(t, web)})); n != 0 {
		t.Errorf("an update that leaves the spec alone makes %d requests of the controller, want none", n)
	}
	if n := len(controlled(Request{Operation: admissionv1.Update, Object: obj(t, web), SpecChanged: true})); n != 4 {
		t.Errorf("a rollout makes %d requests, want 4 (ReplicaSets and Pods, created and deleted)", n)
	}
	cron := obj(t, `
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: shop}
spec:
  jobTemplate:
    metadata: {labels: {job: nightly}}
    spec: {template: {metadata: {labels: {pod: nightly}}}}
`)
	got = controlled(Request{Operation: admissionv1.Delete, Object: cron})
	if len(got) != 2 || got[0].Object.GetKind() != "Job" || got[0].Object.GetLabels()["job"] != "nightly" ||
		got[1].Object.GetKind() != "Pod" || got[1].Object.GetLabels()["pod"] != "nightly" || got[1].Operation != admissionv1.Delete {
		t.Errorf("a CronJob's deletion: %+v", got)
	}
}

// TestDescribe: a webhook without an operation to match is described in its own terms.
func TestDescribe(t *testing.T) {
	w := hook(t, podCreates+istioNamespaces+`
objectSelector: {matchLabels: {sidecar.istio.io/inject: "true"}}`)
	want := "CREATE of pods labelled sidecar.istio.io/inject=true in namespaces without label istio-injection and without label istio.io/rev"
	if got := describe(w); got != want {
		t.Errorf("describe:\n got %s\nwant %s", got, want)
	}
}
