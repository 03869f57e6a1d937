package doctor

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// istioInjector is istiod's sidecar injector as its chart installs it: four webhooks on CREATE of
// Pods, told apart by namespace and object labels. Its service is in namespace %[2]s.
const istioInjector = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: %[1]s}
webhooks:
- name: rev.namespace.sidecar-injector.istio.io
  clientConfig: {service: {name: istiod, namespace: %[2]s, path: /inject, port: 443}}
  sideEffects: None
  failurePolicy: Fail
  admissionReviewVersions: [v1]
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  namespaceSelector:
    matchExpressions:
    - {key: istio.io/rev, operator: In, values: [default]}
    - {key: istio-injection, operator: DoesNotExist}
  objectSelector:
    matchExpressions:
    - {key: sidecar.istio.io/inject, operator: NotIn, values: ["false"]}
- name: rev.object.sidecar-injector.istio.io
  clientConfig: {service: {name: istiod, namespace: %[2]s, path: /inject, port: 443}}
  sideEffects: None
  failurePolicy: Fail
  admissionReviewVersions: [v1]
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  namespaceSelector:
    matchExpressions:
    - {key: istio.io/rev, operator: DoesNotExist}
    - {key: istio-injection, operator: DoesNotExist}
  objectSelector:
    matchExpressions:
    - {key: sidecar.istio.io/inject, operator: NotIn, values: ["false"]}
    - {key: istio.io/rev, operator: In, values: [default]}
- name: namespace.sidecar-injector.istio.io
  clientConfig: {service: {name: istiod, namespace: %[2]s, path: /inject, port: 443}}
  sideEffects: None
  failurePolicy: Fail
  admissionReviewVersions: [v1]
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  namespaceSelector:
    matchExpressions:
    - {key: istio-injection, operator: In, values: [enabled]}
  objectSelector:
    matchExpressions:
    - {key: sidecar.istio.io/inject, operator: NotIn, values: ["false"]}
- name: object.sidecar-injector.istio.io
  clientConfig: {service: {name: istiod, namespace: %[2]s, path: /inject, port: 443}}
  sideEffects: None
  failurePolicy: Fail
  admissionReviewVersions: [v1]
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  namespaceSelector:
    matchExpressions:
    - {key: istio-injection, operator: DoesNotExist}
    - {key: istio.io/rev, operator: DoesNotExist}
  objectSelector:
    matchExpressions:
    - {key: sidecar.istio.io/inject, operator: In, values: ["true"]}
    - {key: istio.io/rev, operator: DoesNotExist}
`

// meshChart is a chart of one Deployment whose Pods carry the labels of values podLabels.
var meshChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 0.1.0\n",
	"values.yaml": "podLabels: {}\nimage: example.com/web:1\n",
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata:
      labels:
        app: {{ .Release.Name }}
        {{- with .Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      containers: [{name: web, image: {{ .Values.image }}}]
`,
}

// TestIstioInjectorWithoutEndpoints: istiod's injector whose service has no ready endpoints blocks
// only what it would inject. An ordinary chart installs; a chart whose Pods ask for the sidecar is
// refused, naming its Pods; once the namespace asks for injection, an upgrade that leaves the Pods
// alone proceeds and one that replaces them is refused. berth doctor of the cluster names what
// the injector intercepts in its selectors' terms. (Its webhooks select every ordinary namespace,
// so not in parallel with the tests that look at theirs.)
func TestIstioInjectorWithoutEndpoints(t *testing.T) {
	env := testenv.New(t)
	name := "istio-sidecar-injector-" + berthtest.Suffix(env)
	env.Apply(t, `{apiVersion: v1, kind: Service, metadata: {name: istiod}, spec: {selector: {app: istiod}, ports: [{port: 443}]}}`)
	env.Apply(t, fmt.Sprintf(istioInjector, name, env.Namespace))
	t.Cleanup(func() {
		_ = env.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	chart := berthtest.WriteChart(t, "web", meshChart)

	berthtest.MustBerth(t, env, "install", "plain", chart)
	if rel := berthtest.LastRecord(t, env, "plain"); rel.Info.Status != release.StatusDeployed {
		t.Fatalf("release plain is %s, want deployed", rel.Info.Status)
	}

	_, _, err := berthtest.Berth(t, env, "install", "meshed", chart, "--set-string", "podLabels.sidecar\\.istio\\.io/inject=true")
	if cli.ExitCode(err) != cli.ExitBlocked {
		t.Fatalf("install of a chart whose Pods ask for the sidecar: exit %d (%v), want %d", cli.ExitCode(err), err, cli.ExitBlocked)
	}
	for _, want := range []string{name, "object.sidecar-injector.istio.io", "Deployment.apps/" + env.Namespace + "/meshed's Pods", "nothing was changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not name %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "Deployment.apps/"+env.Namespace+"/plain") {
		t.Errorf("the refusal names the other release's objects:\n%v", err)
	}
	berthtest.AssertNoObject(t, env, "apps/v1", "Deployment", "meshed")

	// The namespace asks for injection: the injector now intercepts every new Pod there.
	patch := []byte(`{"metadata":{"labels":{"istio-injection":"enabled"}}}`)
	if _, err := env.Client.CoreV1().Namespaces().Patch(t.Context(), env.Namespace, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	berthtest.MustBerth(t, env, "upgrade", "plain", chart)
	if rel := berthtest.LastRecord(t, env, "plain"); rel.Version != 2 || rel.Info.Status != release.StatusDeployed {
		t.Errorf("an upgrade that creates no Pod: revision %d %s, want 2 deployed", rel.Version, rel.Info.Status)
	}
	_, _, err = berthtest.Berth(t, env, "upgrade", "plain", chart, "--set", "image=example.com/web:2")
	if cli.ExitCode(err) != cli.ExitBlocked || !strings.Contains(err.Error(), "namespace.sidecar-injector.istio.io") ||
		!strings.Contains(err.Error(), "Deployment.apps/"+env.Namespace+"/plain's Pods") {
		t.Errorf("an upgrade that replaces the Pods: exit %d, want %d naming the injector and the Pods:\n%v", cli.ExitCode(err), cli.ExitBlocked, err)
	}

	rep, _ := runDoctor(t, env)
	var described bool
	for _, f := range find(rep, "webhook", name) {
		if strings.Contains(f.Problem, `"object.sidecar-injector.istio.io"`) {
			described = strings.Contains(f.Breaks, "pods labelled sidecar.istio.io/inject=true") &&
				strings.Contains(f.Breaks, "in namespaces without label istio-injection")
		}
	}
	if !described {
		t.Errorf("berth doctor does not say in the selectors' terms what the injector intercepts: %+v", find(rep, "webhook", name))
	}
}
