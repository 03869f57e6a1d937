package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/berthdev/berth/internal/resource"
)

// maxNamed is how many requests a finding names before it says how many more there are.
const maxNamed = 6

var selfSubjectReviewGVR = schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "selfsubjectreviews"}

// webhooks finds admission webhooks with failurePolicy Fail that cannot answer, whose CA cannot
// be used, or whose timeout is long. With the requests of an operation (the preflight, or doctor
// of a release), only the webhooks the API server would call for one of them are reported, each
// with the requests it intercepts; otherwise each is reported with what its rules and selectors
// intercept.
func (r *run) webhooks(ctx context.Context) {
	// The gate reads the namespaces of the requests: only once a webhook that fails closed is
	// found, which most clusters have none of.
	var g *gate
	gateOnce := sync.OnceFunc(func() { g = r.gate(ctx) })
	var nsLabels labels.Set
	if !r.opts.planned && r.opts.Namespace != "" {
		if ns, err := r.namespace(ctx, r.opts.Namespace); err == nil {
			nsLabels = ns.GetLabels()
		}
	}
	for _, kind := range webhookConfigs {
		items, _ := r.listAll(ctx, kind.gvr, kind.kind, "")
		for _, item := range items {
			var cfg admissionv1.ValidatingWebhookConfiguration // the mutating one has the same shape for what is read here
			if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &cfg) != nil {
				continue
			}
			id := resource.Identity{Group: admissionv1.GroupName, Kind: kind.kind, Name: cfg.Name}
			for _, w := range cfg.Webhooks {
				if !failsClosed(w) {
					continue
				}
				var in interception
				if r.opts.planned {
					gateOnce()
				}
				switch {
				case g != nil:
					in = g.intercepted(ctx, accessor(cfg.Name, kind.gvr == mutatingGVR, w), r.opts.requests)
					if len(in.called)+len(in.maybe) == 0 {
						continue
					}
				case r.opts.Namespace != "" && !selects(w.NamespaceSelector, nsLabels):
					continue
				default:
					in.rules = describe(w)
				}
				r.webhook(ctx, id, w, in)
			}
		}
	}
}

// failsClosed reports whether a request fails when webhook w cannot be called.
func failsClosed(w admissionv1.ValidatingWebhook) bool {
	return w.FailurePolicy == nil || *w.FailurePolicy == admissionv1.Fail // Fail is the default of admissionregistration/v1
}

// interception is what a webhook intercepts: of an operation's requests, those it is called for
// and those it may be called for (with why it cannot be decided); without requests, its rules and
// selectors in words.
type interception struct {
	called []string
	maybe  []string
	why    string
	rules  string
}

// intercepted returns the requests of reqs the API server calls webhook h for.
func (g *gate) intercepted(ctx context.Context, h webhook.WebhookAccessor, reqs []Request) interception {
	var in interception
	for _, q := range reqs {
		v, why := g.calls(ctx, h, q)
		what := string(q.Operation) + " of " + q.Subject()
		switch {
		case v == called && !slices.Contains(in.called, what):
			in.called = append(in.called, what)
		case v == mayBeCalled && !slices.Contains(in.maybe, what):
			in.maybe = append(in.maybe, what)
			in.why = why
		}
	}
	return in
}

// breaks says what a webhook that cannot be called breaks, and whether that is certain.
func (in interception) breaks(cause string) (string, Severity) {
	switch {
	case in.rules != "":
		return fmt.Sprintf("every %s fails%s", in.rules, cause), Blocker
	case len(in.called) > 0:
		return fmt.Sprintf("the API server calls it for %s, which %s%s", list(in.called, maxNamed), verb(len(in.called), "fails", "fail"), cause), Blocker
	}
	return fmt.Sprintf("it may be called for %s (%s), which would then fail%s", list(in.maybe, maxNamed), in.why, cause), Warning
}

// verb is one or many, by n.
func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (r *run) webhook(ctx context.Context, id resource.Identity, w admissionv1.ValidatingWebhook, in interception) {
	timeout := int32(10)
	if w.TimeoutSeconds != nil {
		timeout = *w.TimeoutSeconds
	}
	if bad := badCABundle(w.ClientConfig.CABundle); bad != "" {
		breaks, sev := in.breaks("")
		r.add(Finding{
			Severity: sev, Check: "webhook", Object: id,
			Problem: fmt.Sprintf("webhook %q (failurePolicy Fail): its caBundle %s, so the API server cannot call it", w.Name, bad),
			Breaks:  breaks,
			Fix:     "set the webhook's caBundle to the PEM certificate of the CA that signed its server's certificate",
		})
		return
	}
	backend, ok := r.Backend(ctx, w.ClientConfig)
	if !ok && r.endpointsUnreadable(ctx, w.ClientConfig.Service) {
		return
	}
	if !ok {
		backend += r.missingService(ctx, w.ClientConfig.Service)
	}
	switch {
	case !ok:
		breaks, sev := in.breaks(" while its backend does not answer")
		r.add(Finding{
			Severity: sev, Check: "webhook", Object: id,
			Problem: fmt.Sprintf("webhook %q (failurePolicy Fail, timeoutSeconds %d) cannot answer: it calls %s", w.Name, timeout, backend),
			Breaks:  breaks,
			Fix:     fmt.Sprintf("bring its backend up, or delete %s %s if it is no longer used", id.Kind, id.Name),
		})
	case timeout > longWebhookTimeout:
		breaks, _ := in.breaks(" after waiting that long when the backend is slow")
		r.add(Finding{
			Severity: Warning, Check: "webhook", Object: id,
			Problem: fmt.Sprintf("webhook %q (failurePolicy Fail) waits up to %ds for %s", w.Name, timeout, backend),
			Breaks:  breaks,
			Fix:     fmt.Sprintf("lower the webhook's timeoutSeconds to %d or less", longWebhookTimeout),
		})
	}
}

// gate returns the matcher of the operation's requests: it sees the namespaces they are in (as
// they are, or as they will be created) and who makes them.
func (r *run) gate(ctx context.Context) *gate {
	names := map[string]bool{}
	for _, q := range r.opts.requests {
		if ns := q.Object.GetNamespace(); ns != "" {
			names[ns] = true
		}
	}
	var nss []*corev1.Namespace
	for name := range names {
		ns := asNamespace(name, nil)
		if live, err := r.namespace(ctx, name); err == nil {
			ns = asNamespace(name, live.GetLabels())
		} else if !apierrors.IsNotFound(err) {
			r.unreadable(namespaceGVR, "Namespace", "", err)
		}
		nss = append(nss, ns)
	}
	return newGate(r.Mapper, nss, sync.OnceValue(func() user.Info { return r.whoami(ctx) }))
}

// whoami asks the API server who the checks run as, which is who the operation runs as; nil
// when it will not say.
func (r *run) whoami(ctx context.Context) user.Info {
	review := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}}
	out, err := r.Dynamic.Resource(selfSubjectReviewGVR).Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return nil
	}
	u := &user.DefaultInfo{}
	u.Name, _, _ = unstructured.NestedString(out.Object, "status", "userInfo", "username")
	u.UID, _, _ = unstructured.NestedString(out.Object, "status", "userInfo", "uid")
	u.Groups, _, _ = unstructured.NestedStringSlice(out.Object, "status", "userInfo", "groups")
	if extra, ok, _ := unstructured.NestedMap(out.Object, "status", "userInfo", "extra"); ok {
		u.Extra = map[string][]string{}
		for k, v := range extra {
			vs, _ := v.([]any)
			for _, s := range vs {
				if s, ok := s.(string); ok {
					u.Extra[k] = append(u.Extra[k], s)
				}
			}
		}
	}
	if u.Name == "" {
		return nil
	}
	return u
}

// selects reports whether a namespace selector matches a namespace's labels.
func selects(sel *metav1.LabelSelector, nsLabels labels.Set) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(nsLabels)
}

// describe says in plain words what webhook w intercepts, in its rules' and selectors' own terms:
// "CREATE of pods labelled sidecar.istio.io/inject=true in namespaces without istio-injection".
func describe(w admissionv1.ValidatingWebhook) string {
	var parts []string
	for _, rule := range w.Rules {
		ops := make([]string, len(rule.Operations))
		for i, op := range rule.Operations {
			ops[i] = string(op)
		}
		opText := strings.Join(ops, "/")
		if slices.Contains(rule.Operations, admissionv1.OperationAll) {
			opText = "request (CREATE, UPDATE, DELETE, CONNECT)"
		}
		var res []string
		for _, g := range rule.APIGroups {
			for _, rs := range rule.Resources {
				switch {
				case rs == "*" && g == "*":
					res = append(res, "every resource")
				case g == "" || g == "*":
					res = append(res, rs)
				default:
					res = append(res, rs+"."+g)
				}
			}
		}
		parts = append(parts, opText+" of "+strings.Join(res, ", "))
	}
	what := strings.Join(parts, "; ")
	if len(parts) == 0 {
		what = "request it intercepts"
	}
	if s := selectorWords(w.ObjectSelector); s != "" {
		what += " " + s
	}
	if s := selectorWords(w.NamespaceSelector); s != "" {
		what += " in namespaces " + s
	}
	if len(w.MatchConditions) > 0 {
		var names []string
		for _, c := range w.MatchConditions {
			names = append(names, c.Name)
		}
		what += " for which its matchConditions (" + strings.Join(names, ", ") + ") hold"
	}
	return what
}

// selectorWords says what a label selector selects: "labelled a=b and without c"; "" for a
// selector that selects everything.
func selectorWords(sel *metav1.LabelSelector) string {
	if sel == nil {
		return ""
	}
	var words []string
	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		words = append(words, fmt.Sprintf("labelled %s=%s", k, sel.MatchLabels[k]))
	}
	for _, e := range sel.MatchExpressions {
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			if len(e.Values) == 1 {
				words = append(words, fmt.Sprintf("labelled %s=%s", e.Key, e.Values[0]))
			} else {
				words = append(words, fmt.Sprintf("labelled %s in (%s)", e.Key, strings.Join(e.Values, ", ")))
			}
		case metav1.LabelSelectorOpNotIn:
			words = append(words, fmt.Sprintf("not labelled %s in (%s)", e.Key, strings.Join(e.Values, ", ")))
		case metav1.LabelSelectorOpExists:
			words = append(words, "with label "+e.Key)
		case metav1.LabelSelectorOpDoesNotExist:
			words = append(words, "without label "+e.Key)
		}
	}
	return strings.Join(words, " and ")
}
