package doctor

import (
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/release"
)

// TestClear: Clear is true only when the preflight could find nothing in what was seen; every
// webhook, APIService or namespace that could make it find something makes it false.
func TestClear(t *testing.T) {
	const deadConfigMaps = `
name: dead.example.com
clientConfig: {service: {namespace: shop, name: nobody-home}}
rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
`
	shop := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "a"}}}
	deleting := shop.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	apiService := func(service string, available string) unstructured.Unstructured {
		u := unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		if service != "" {
			u.Object["spec"] = map[string]any{"service": map[string]any{"namespace": "metrics", "name": service}}
		}
		if available != "" {
			u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": available}}}
		}
		return u
	}
	validating := func(y string) []admissionv1.ValidatingWebhookConfiguration {
		return []admissionv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "dead"}, Webhooks: []admissionv1.ValidatingWebhook{hook(t, y)}}}
	}
	createSettings := []Request{{Operation: admissionv1.Create, Object: obj(t, settings)}}
	createWeb := []Request{{Operation: admissionv1.Create, Object: obj(t, web)}}
	tests := []struct {
		name string
		op   release.Operation
		reqs []Request
		seen Seen
		ns   *metav1.PartialObjectMetadata // shop, as seen
		want bool
	}{
		{name: "nothing", op: release.OpInstall, reqs: createSettings, ns: shop, want: true},
		{name: "namespace not seen", op: release.OpInstall, reqs: createSettings, want: false},
		{name: "namespace deleting", op: release.OpInstall, reqs: createSettings, ns: deleting, want: false},
		{name: "uninstall in a namespace deleting", op: release.OpUninstall, reqs: createSettings, ns: deleting, want: true},
		{name: "APIService of the API server", op: release.OpInstall, reqs: createSettings, ns: shop,
			seen: Seen{APIServices: []unstructured.Unstructured{apiService("", "True")}}, want: true},
		{name: "APIService Available", op: release.OpInstall, reqs: createSettings, ns: shop,
			seen: Seen{APIServices: []unstructured.Unstructured{apiService("metrics-server", "True")}}, want: true},
		{name: "APIService not Available", op: release.OpInstall, reqs: createSettings, ns: shop,
			seen: Seen{APIServices: []unstructured.Unstructured{apiService("metrics-server", "False")}}, want: false},
		{name: "APIService without conditions", op: release.OpInstall, reqs: createSettings, ns: shop,
			seen: Seen{APIServices: []unstructured.Unstructured{apiService("metrics-server", "")}}, want: false},
		{name: "webhook called", op: release.OpInstall, reqs: createSettings, ns: shop,
			seen: Seen{Validating: validating(deadConfigMaps)}, want: false},
		{name: "mutating webhook called", op: release.OpInstall, reqs: createSettings, ns: shop,
			seen: Seen{Mutating: []admissionv1.MutatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "dead"},
				Webhooks: []admissionv1.MutatingWebhook{{Name: "dead.example.com", Rules: hook(t, deadConfigMaps).Rules}}}}}, want: false},
		{name: "webhook that fails open", op: release.OpInstall, reqs: createSettings, ns: shop,
			seen: Seen{Validating: validating(deadConfigMaps + "failurePolicy: Ignore\n")}, want: true},
		{name: "webhook of other requests", op: release.OpInstall, reqs: createWeb, ns: shop,
			seen: Seen{Validating: validating(deadConfigMaps)}, want: true},
		{name: "webhook called for the Pods of a Deployment", op: release.OpInstall, reqs: createWeb, ns: shop,
			seen: Seen{Validating: validating(podCreates)}, want: false},
		{name: "webhook of other namespaces", op: release.OpInstall, reqs: createSettings, ns: shop,
			seen: Seen{Validating: validating(deadConfigMaps + "namespaceSelector: {matchLabels: {team: b}}\n")}, want: true},
		{name: "webhook that may be called by who the operation runs as", op: release.OpInstall, reqs: createSettings, ns: shop,
			seen: Seen{Validating: validating(deadConfigMaps + "matchConditions: [{name: nobody, expression: 'request.userInfo.username == \"nobody\"'}]\n")}, want: false},
		{name: "webhook not called by its matchConditions", op: release.OpInstall, reqs: createSettings, ns: shop,
			seen: Seen{Validating: validating(deadConfigMaps + "matchConditions: [{name: never, expression: 'false'}]\n")}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.seen.Namespace = func(name string) *metav1.PartialObjectMetadata {
				if name == "shop" {
					return tt.ns
				}
				return nil
			}
			if got := Clear(t.Context(), testMapper(), tt.op, "shop", tt.reqs, tt.seen); got != tt.want {
				t.Errorf("Clear: %v, want %v", got, tt.want)
			}
		})
	}
}
