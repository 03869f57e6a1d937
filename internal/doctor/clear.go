package doctor

import (
	"context"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/berthdev/berth/internal/release"
)

// Seen is what a reader that may watch them all (the controller, with its own rights) holds of
// the cluster-wide objects the preflight reads.
type Seen struct {
	Validating []admissionv1.ValidatingWebhookConfiguration
	Mutating   []admissionv1.MutatingWebhookConfiguration
	// APIServices are apiregistration.k8s.io/v1 APIServices.
	APIServices []unstructured.Unstructured
	// Namespace returns namespace name's metadata as seen, or nil when it was not seen.
	Namespace func(name string) *metav1.PartialObjectMetadata
}

// Clear reports whether Preflight of op on the requests reqs in namespace could find nothing,
// blocker or warning, in what seen holds: no admission webhook that fails closed and is, or may
// be, called for one of the requests (whatever its backend), no APIService served by a Service
// that is not Available (whatever it serves), and, but for an uninstall, the namespace seen and
// not being deleted. It reads nothing but seen and mapper, and says nothing of what it saw: a
// caller that may not show what seen holds to whom the operation runs for runs Preflight, as
// that account, only when Clear is false. Who the operation runs as is not known here, so a
// webhook whose matchConditions read it counts as one that may be called.
func Clear(ctx context.Context, mapper meta.RESTMapper, op release.Operation, namespace string, reqs []Request, seen Seen) bool {
	for _, item := range seen.APIServices {
		if svc, _, _ := unstructured.NestedString(item.Object, "spec", "service", "name"); svc != "" {
			if ok, _ := availability(&item); !ok {
				return false
			}
		}
	}
	if op != release.OpUninstall && namespace != "" {
		ns := seen.Namespace(namespace)
		if ns == nil || ns.DeletionTimestamp != nil {
			return false
		}
	}
	var g *gate
	for _, w := range seenWebhooks(seen) {
		if !failsClosed(w.webhook) {
			continue
		}
		if g == nil {
			reqs = WithControllers(reqs)
			var ok bool
			if g, ok = seenGate(mapper, reqs, seen); !ok {
				return false
			}
		}
		in := g.intercepted(ctx, accessor(w.config, w.mutating, w.webhook), reqs)
		if len(in.called)+len(in.maybe) > 0 {
			return false
		}
	}
	return true
}

// seenWebhook is a webhook of a configuration seen, in the shape the checks read both kinds in.
type seenWebhook struct {
	config   string
	mutating bool
	webhook  admissionv1.ValidatingWebhook
}

func seenWebhooks(seen Seen) []seenWebhook {
	var out []seenWebhook
	for _, cfg := range seen.Validating {
		for _, w := range cfg.Webhooks {
			out = append(out, seenWebhook{config: cfg.Name, webhook: w})
		}
	}
	for _, cfg := range seen.Mutating {
		for _, w := range cfg.Webhooks {
			out = append(out, seenWebhook{config: cfg.Name, mutating: true, webhook: admissionv1.ValidatingWebhook{
				Name: w.Name, ClientConfig: w.ClientConfig, Rules: w.Rules, FailurePolicy: w.FailurePolicy,
				MatchPolicy: w.MatchPolicy, NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector,
				SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
				MatchConditions: w.MatchConditions,
			}})
		}
	}
	return out
}

// seenGate is the gate of reqs over the namespaces seen; false when a request's namespace was
// not seen (not yet created, or not yet in the watch), whose labels a selector may read.
func seenGate(mapper meta.RESTMapper, reqs []Request, seen Seen) (*gate, bool) {
	names := map[string]bool{}
	for _, q := range reqs {
		if ns := q.Object.GetNamespace(); ns != "" {
			names[ns] = true
		}
	}
	nss := make([]*corev1.Namespace, 0, len(names))
	for name := range names {
		ns := seen.Namespace(name)
		if ns == nil {
			return nil, false
		}
		nss = append(nss, asNamespace(name, ns.Labels))
	}
	return newGate(mapper, nss, func() user.Info { return nil }), true
}
