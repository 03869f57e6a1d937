package doctor

import (
	"context"
	"fmt"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/namespace"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/object"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/berthdev/berth/internal/resource"
)

// verdict is whether the API server calls a webhook for a request.
type verdict int

const (
	// skipped: the webhook is not called (its rules, selectors or matchConditions exclude it).
	skipped verdict = iota
	// called: the webhook is called.
	called
	// mayBeCalled: its rules and selectors match, and its matchConditions could not be decided.
	mayBeCalled
)

// gate decides, with the API server's own matchers, whether an admission webhook is called for a
// request: its namespaceSelector (with the API server's exemption of cluster-scoped objects), its
// objectSelector (old and new object of an update), its rules (operation, group, version,
// resource, scope; other versions of the resource under matchPolicy Equivalent) and its
// matchConditions, evaluated with the API server's CEL library.
type gate struct {
	mapper meta.RESTMapper
	// namespaces holds the labels of every namespace a request is in, as they will be when the
	// request is made.
	namespaces corelisters.NamespaceLister
	// user says who makes the operation's own requests, asked only when a matchCondition needs
	// it; nil when it is not known.
	user func() user.Info
}

// newGate returns a gate that sees the namespaces nss, and asks who to learn who makes the
// requests.
func newGate(mapper meta.RESTMapper, nss []*corev1.Namespace, who func() user.Info) *gate {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, ns := range nss {
		_ = idx.Add(ns)
	}
	return &gate{mapper: mapper, namespaces: corelisters.NewNamespaceLister(idx), user: who}
}

// conditionCompiler compiles matchConditions as the API server does; built once, when a webhook
// first has some.
var conditionCompiler = sync.OnceValue(func() celplugin.ConditionCompiler {
	return celplugin.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

// accessor returns the API server's view of webhook w of configuration config, with the defaults
// of admissionregistration/v1 filled in.
func accessor(config string, mutating bool, w admissionv1.ValidatingWebhook) webhook.WebhookAccessor {
	if w.MatchPolicy == nil {
		eq := admissionv1.Equivalent
		w.MatchPolicy = &eq
	}
	if w.NamespaceSelector == nil {
		w.NamespaceSelector = &metav1.LabelSelector{} // everything; a nil selector would select nothing
	}
	if w.ObjectSelector == nil {
		w.ObjectSelector = &metav1.LabelSelector{}
	}
	if !mutating {
		return webhook.NewValidatingWebhookAccessor(config+"/"+w.Name, config, &w)
	}
	m := admissionv1.MutatingWebhook{
		Name: w.Name, ClientConfig: w.ClientConfig, Rules: w.Rules, FailurePolicy: w.FailurePolicy,
		MatchPolicy: w.MatchPolicy, NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector,
		SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
		MatchConditions: w.MatchConditions,
	}
	return webhook.NewMutatingWebhookAccessor(config+"/"+w.Name, config, &m)
}

// calls says whether the API server calls webhook h for request q, and when it cannot be decided,
// why.
func (g *gate) calls(ctx context.Context, h webhook.WebhookAccessor, q Request) (verdict, string) {
	attr := g.attributes(q)
	if ok, err := (&namespace.Matcher{NamespaceLister: g.namespaces}).MatchNamespaceSelector(h, attr); err != nil {
		return mayBeCalled, "its namespaceSelector could not be decided: " + err.Error()
	} else if !ok {
		return skipped, ""
	}
	if ok, err := (&object.Matcher{}).MatchObjectSelector(h, attr); err != nil {
		return mayBeCalled, "its objectSelector could not be decided: " + err.Error()
	} else if !ok {
		return skipped, ""
	}
	kind, ok := g.matchRules(h, attr)
	if !ok {
		return skipped, ""
	}
	return g.matchConditions(ctx, h, q, attr, kind)
}

// matchRules says whether a rule of h matches the request, or under matchPolicy Equivalent the
// same resource in another version, and the kind the webhook would be sent.
func (g *gate) matchRules(h webhook.WebhookAccessor, attr admission.Attributes) (schema.GroupVersionKind, bool) {
	for _, r := range h.GetRules() {
		if (&rules.Matcher{Rule: r, Attr: attr}).Matches() {
			return attr.GetKind(), true
		}
	}
	if p := h.GetMatchPolicy(); p == nil || *p != admissionv1.Equivalent {
		return schema.GroupVersionKind{}, false
	}
	mappings, _ := g.mapper.RESTMappings(attr.GetKind().GroupKind())
	for _, r := range h.GetRules() {
		for _, m := range mappings {
			if m.Resource == attr.GetResource() {
				continue
			}
			if (&rules.Matcher{Rule: r, Attr: resourceOverride{attr, m.Resource}}).Matches() {
				return m.GroupVersionKind, true
			}
		}
	}
	return schema.GroupVersionKind{}, false
}

// resourceOverride is a request seen as one for another version of its resource.
type resourceOverride struct {
	admission.Attributes
	resource schema.GroupVersionResource
}

func (a resourceOverride) GetResource() schema.GroupVersionResource { return a.resource }

// matchConditions evaluates h's matchConditions for the request, as the API server would. What
// cannot be known here (who a controller acts as, the authorizer) leaves the webhook one that may
// be called.
func (g *gate) matchConditions(ctx context.Context, h webhook.WebhookAccessor, q Request, attr admission.Attributes, kind schema.GroupVersionKind) (verdict, string) {
	conds := h.GetMatchConditions()
	if len(conds) == 0 {
		return called, ""
	}
	if q.By == (resource.Identity{}) && g.user != nil {
		if u := g.user(); u != nil {
			attr = withUser{attr, u}
		}
	}
	if attr.GetUserInfo() == nil {
		for _, c := range conds {
			if strings.Contains(c.Expression, "userInfo") {
				who := "who berth runs as"
				if q.By != (resource.Identity{}) {
					who = "who " + q.By.Kind + "'s controller runs as"
				}
				return mayBeCalled, fmt.Sprintf("its matchCondition %q reads request.userInfo, and %s is not known here", c.Name, who)
			}
		}
	}
	va := &admission.VersionedAttributes{Attributes: attr, VersionedKind: kind}
	if o := attr.GetObject(); o != nil {
		va.VersionedObject = admission.NewLazyObject(o)
	}
	if o := attr.GetOldObject(); o != nil {
		va.VersionedOldObject = admission.NewLazyObject(o)
	}
	res := h.GetCompiledMatcher(conditionCompiler()).Match(ctx, va, nil, nil)
	switch {
	case res.Error != nil:
		return mayBeCalled, "its matchConditions could not be evaluated here: " + res.Error.Error()
	case !res.Matches:
		return skipped, ""
	}
	return called, ""
}

// withUser is a request made by user u.
type withUser struct {
	admission.Attributes
	u user.Info
}

func (a withUser) GetUserInfo() user.Info { return a.u }

// attributes are the admission attributes of request q.
func (g *gate) attributes(q Request) admission.Attributes {
	obj := q.Object
	gvk := obj.GroupVersionKind()
	gvr, namespaced := g.resource(gvk, obj.GetNamespace() != "")
	ns := ""
	if namespaced {
		ns = obj.GetNamespace()
	}
	if gvr.GroupResource() == (schema.GroupResource{Resource: "namespaces"}) {
		ns = obj.GetName() // the API server's namespace of a request about a namespace
	}
	var sent, old runtime.Object
	var op admission.Operation
	switch q.Operation {
	case admissionv1.Create:
		op, sent = admission.Create, obj
	case admissionv1.Update:
		op, sent, old = admission.Update, obj, q.Old
		if q.Old == nil {
			old = obj
		}
	case admissionv1.Delete:
		op, old = admission.Delete, obj
	default:
		op, sent = admission.Connect, obj
	}
	return admission.NewAttributesRecord(sent, old, gvk, ns, obj.GetName(), gvr, "", op, nil, false, nil)
}

// resource maps a kind to its resource and scope; a kind the API server does not serve yet (its
// CRD is in the same release) is guessed, namespaced when its object has a namespace.
func (g *gate) resource(gvk schema.GroupVersionKind, hasNamespace bool) (schema.GroupVersionResource, bool) {
	if g.mapper != nil {
		if m, err := g.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace
		}
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural, hasNamespace
}

// asNamespace returns the labels a namespace will have as a Namespace for the gate.
func asNamespace(name string, labels map[string]string) *corev1.Namespace {
	ns := &corev1.Namespace{}
	ns.Name = name
	ns.Labels = map[string]string{corev1.LabelMetadataName: name}
	for k, v := range labels {
		ns.Labels[k] = v
	}
	return ns
}
