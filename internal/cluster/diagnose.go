package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/resource"
)

// BlockerKind says what kind of thing blocks an operation on an object.
type BlockerKind string

const (
	BlockedByWebhook    BlockerKind = "webhook"
	BlockedByFinalizer  BlockerKind = "finalizer"
	BlockedByDependents BlockerKind = "dependents"
	BlockedByPermission BlockerKind = "permission"
	BlockedByOther      BlockerKind = "other"
)

// Blocker is why an object could not be changed or did not go away, and what to do about it.
type Blocker struct {
	Object  resource.Identity `json:"object"`
	Kind    BlockerKind       `json:"kind"`
	Message string            `json:"message"`
	// Webhook describes the admission webhook that refused or timed out the request.
	Webhook *WebhookReport `json:"webhook,omitempty"`
	// Finalizers the object is waiting on, and who usually removes each.
	Finalizers []FinalizerReport `json:"finalizers,omitempty"`
	// Dependents still alive that the object waits for (foreground deletion).
	Dependents []DependentReport `json:"dependents,omitempty"`
	Next       string            `json:"next"`
}

// WebhookReport describes an admission webhook.
type WebhookReport struct {
	Configuration  string `json:"configuration"`
	ConfigKind     string `json:"configurationKind"`
	Name           string `json:"name"`
	Operation      string `json:"operation"`
	FailurePolicy  string `json:"failurePolicy"`
	TimeoutSeconds int32  `json:"timeoutSeconds"`
	// Backend is the service (namespace/name) or URL the webhook calls.
	Backend string `json:"backend"`
	// Reachable says whether the service has ready endpoints, or the URL accepts connections.
	Reachable bool   `json:"reachable"`
	Detail    string `json:"detail"`
}

// FinalizerReport names a finalizer, who removes it, and what that one waits for.
type FinalizerReport struct {
	Name   string          `json:"name"`
	Holder FinalizerHolder `json:"holder"`
	// Domain names the controller of a finalizer HeldByController.
	Domain string `json:"domain,omitempty"`
	// Conditions are the object's own conditions by which a built-in holder says why it waits:
	// a CRD's Terminating condition, a Namespace's deletion conditions.
	Conditions []Condition `json:"conditions,omitempty"`
	// WaitsFor are the objects the holder waits for: a CRD's instances still there, the Pods
	// that use a claim, the claim bound to a volume.
	WaitsFor []DependentReport `json:"waitsFor,omitempty"`
}

// DependentReport is an object that still exists and holds up its owner's deletion.
type DependentReport struct {
	Object resource.Identity `json:"object"`
	State  string            `json:"state"`
}

func (b Blocker) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "%s: %s", b.Object, b.Message)
	if w := b.Webhook; w != nil {
		fmt.Fprintf(&s, "\n    webhook %q of %s %q: operation %s, failurePolicy %s, timeoutSeconds %d, backend %s: %s",
			w.Name, w.ConfigKind, w.Configuration, w.Operation, w.FailurePolicy, w.TimeoutSeconds, w.Backend, w.Detail)
	}
	for _, f := range b.Finalizers {
		fmt.Fprintf(&s, "\n    finalizer %s, removed by %s", f.Name, HolderName(f.Holder, f.Domain))
		for _, c := range f.Conditions {
			fmt.Fprintf(&s, "\n      %s", c)
		}
		for _, w := range f.WaitsFor {
			fmt.Fprintf(&s, "\n      waits for %s: %s", w.Object, w.State)
		}
	}
	for _, d := range b.Dependents {
		fmt.Fprintf(&s, "\n    dependent %s: %s", d.Object, d.State)
	}
	if b.Next != "" {
		fmt.Fprintf(&s, "\n    next: %s", b.Next)
	}
	return s.String()
}

var webhookName = regexp.MustCompile(`webhook "([^"]+)"`)

// Diagnose finds out why an operation on the object id was refused (err) or, with err nil, why the
// object is still there. It never fails: what it cannot find out, it says.
func (c *Client) Diagnose(ctx context.Context, id resource.Identity, operation string, err error) Blocker {
	b := Blocker{Object: id, Kind: BlockedByOther}
	if err != nil {
		b.Message = err.Error()
		switch {
		case webhookName.MatchString(err.Error()):
			name := webhookName.FindStringSubmatch(err.Error())[1]
			b.Kind = BlockedByWebhook
			b.Webhook = c.webhookReport(ctx, id, name, operation, err)
			b.Next = "fix or remove the webhook (its backend must answer and allow the request), then run the command again"
		case apierrors.IsForbidden(err):
			b.Kind = BlockedByPermission
			b.Next = fmt.Sprintf("grant the permission to %s %s, or run as a user who has it, then run the command again", strings.ToLower(operation), id.GroupKind())
		default:
			b.Next = "fix the cause above, then run the command again"
		}
		return b
	}
	live, gerr := c.Get(ctx, id)
	if gerr != nil {
		b.Message = "state unknown: " + gerr.Error()
		b.Next = "run the command again"
		return b
	}
	if live == nil {
		b.Message = "gone"
		return b
	}
	if live.GetDeletionTimestamp() == nil {
		b.Message = "still exists and is not being deleted"
		b.Next = "run the command again"
		return b
	}
	deps := c.dependents(ctx, live)
	b.Finalizers = Finalizers(live)
	for i := range b.Finalizers {
		b.Finalizers[i].WaitsFor = WaitedFor(ctx, c.dynamic, live, b.Finalizers[i])
	}
	switch {
	case len(deps) > 0:
		b.Kind = BlockedByDependents
		b.Dependents = deps
		b.Message = fmt.Sprintf("being deleted, waiting for %d dependent(s) to go first (foreground deletion)", len(deps))
		b.Next = "find out why the dependents below do not go away (their own finalizers, a webhook), or uninstall with background cascading deletion, which does not wait for them"
	case len(b.Finalizers) > 0:
		b.Kind = BlockedByFinalizer
		names := make([]string, len(b.Finalizers))
		for i, f := range b.Finalizers {
			names[i] = f.Name
		}
		b.Message = "being deleted, waiting for finalizer(s) " + strings.Join(names, ", ")
		b.Next = finalizerNext(b.Finalizers)
	default:
		b.Message = "being deleted"
		b.Next = "run the command again"
	}
	return b
}

// HolderName says who holder is, in words; domain names a controller outside Kubernetes.
func HolderName(holder FinalizerHolder, domain string) string {
	switch holder {
	case HeldByCRDCleanup:
		return "the API server's CRD cleanup, once every instance of the CRD is gone"
	case HeldByNamespaceController:
		return "the namespace controller, once the namespace is empty"
	case HeldByGarbageCollector:
		return "the garbage collector, once the dependents are gone (foregroundDeletion) or orphaned (orphan)"
	case HeldByPVProtection:
		return "the PV protection controller, once no claim is bound to the volume"
	case HeldByPVCProtection:
		return "the PVC protection controller, once no Pod uses the claim"
	case HeldByJobController:
		return "the Job controller, once it has counted the Pod"
	case HeldByController:
		return "a controller of " + domain + "; nothing in the cluster removes it if that controller is gone"
	}
	return "an unknown controller; nothing in the cluster removes it if that controller is gone"
}

// finalizerNext says what to do about an object held by finalizers: Kubernetes' own go once
// what they wait for is gone; others need their controller.
func finalizerNext(fs []FinalizerReport) string {
	var next []string
	add := func(s string) {
		if !slices.Contains(next, s) {
			next = append(next, s)
		}
	}
	for _, f := range fs {
		switch f.Holder {
		case HeldByCRDCleanup:
			add("the API server deletes the CRD's instances and retries until none is left: remove what holds the instances (their own finalizers), or wait")
		case HeldByNamespaceController:
			add("the namespace controller empties the namespace first: see its conditions for what is left")
		case HeldByGarbageCollector:
			add("the garbage collector removes it once the dependents are gone: find out why they do not go away")
		case HeldByPVCProtection:
			add("delete the Pods that use the claim, or wait until they finish")
		case HeldByPVProtection:
			add("delete the claim bound to the volume")
		case HeldByJobController:
			add("make sure the Job controller runs")
		default:
			add("make sure the controller that owns each finalizer runs (or remove the finalizer if that controller is gone for good)")
		}
	}
	return strings.Join(next, "; ") + "; then run the command again"
}

// String is the condition as the object states it: type=status (reason): message.
func (c Condition) String() string {
	s := "condition " + c.Type + "=" + c.Status
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	if c.Message != "" {
		s += ": " + c.Message
	}
	return s
}

// dependentKinds are the kinds whose objects commonly hold up an owner's foreground deletion.
var dependentKinds = []schema.GroupVersionResource{
	{Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "", Version: "v1", Resource: "pods"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Group: "apps", Version: "v1", Resource: "controllerrevisions"},
}

// Dependents lists the live objects, two generations deep, that name the object id (if it exists)
// in their ownerReferences: a Deployment's ReplicaSets and their Pods, a Job's Pods.
func (c *Client) Dependents(ctx context.Context, id resource.Identity) []DependentReport {
	live, err := c.Get(ctx, id)
	if err != nil || live == nil {
		return nil
	}
	return c.dependents(ctx, live)
}

// dependents lists the live objects, two generations deep, that name owner in their
// ownerReferences.
func (c *Client) dependents(ctx context.Context, owner *unstructured.Unstructured) []DependentReport {
	if owner.GetNamespace() == "" {
		return nil
	}
	var all []unstructured.Unstructured
	for _, gvr := range dependentKinds {
		list, err := c.dynamic.Resource(gvr).Namespace(owner.GetNamespace()).List(ctx, metav1.ListOptions{})
		if err == nil {
			all = append(all, list.Items...)
		}
	}
	owners := map[types.UID]bool{owner.GetUID(): true}
	var out []DependentReport
	for range 2 {
		next := map[types.UID]bool{}
		for i := range all {
			obj := &all[i]
			for _, ref := range obj.GetOwnerReferences() {
				if owners[ref.UID] && !next[obj.GetUID()] {
					next[obj.GetUID()] = true
					out = append(out, DependentReport{Object: resource.IdentityOf(obj), State: presence(obj)})
				}
			}
		}
		owners = next
	}
	slices.SortFunc(out, func(a, b DependentReport) int { return resource.Compare(a.Object, b.Object) })
	return out
}

// webhookReport finds the webhook named name that intercepts operation on the object id, and
// checks whether its backend can answer. Webhook names are unique only within a configuration:
// among several by that name, the one whose rules and namespace selector match the object is it.
func (c *Client) webhookReport(ctx context.Context, id resource.Identity, name, operation string, cause error) *WebhookReport {
	r := &WebhookReport{Name: name, Operation: operation}
	msg := cause.Error()
	switch {
	case strings.Contains(msg, "denied the request"):
		r.Detail = "it answered and denied the request"
	case errors.Is(cause, context.DeadlineExceeded) || strings.Contains(msg, "deadline exceeded") ||
		strings.Contains(msg, "Client.Timeout exceeded") || strings.Contains(msg, "i/o timeout"):
		r.Detail = "it did not answer within its timeout"
	default:
		r.Detail = "it could not be called"
	}
	var nsLabels labels.Set
	if id.Namespace != "" {
		if ns, err := c.dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, id.Namespace, metav1.GetOptions{}); err == nil {
			nsLabels = ns.GetLabels()
		}
	}
	type candidate struct {
		config, kind string
		hook         admissionv1.ValidatingWebhook
	}
	var found []candidate
	for _, kind := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{
		{admissionv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"), "ValidatingWebhookConfiguration"},
		{admissionv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations"), "MutatingWebhookConfiguration"},
	} {
		list, err := c.dynamic.Resource(kind.gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, item := range list.Items {
			var cfg admissionv1.ValidatingWebhookConfiguration // the mutating one has the same shape for what is read here
			if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &cfg) != nil {
				continue
			}
			for _, w := range cfg.Webhooks {
				if w.Name == name {
					found = append(found, candidate{cfg.Name, kind.name, w})
				}
			}
		}
	}
	if len(found) > 1 {
		matching := slices.DeleteFunc(slices.Clone(found), func(c candidate) bool {
			return !intercepts(c.hook, id, operation, nsLabels)
		})
		if len(matching) > 0 {
			found = matching
		}
	}
	if len(found) == 0 {
		r.Detail += "; no webhook configuration by that name was found (it may have been removed since)"
		return r
	}
	w := found[0].hook
	r.Configuration, r.ConfigKind = found[0].config, found[0].kind
	if w.FailurePolicy != nil {
		r.FailurePolicy = string(*w.FailurePolicy)
	}
	if w.TimeoutSeconds != nil {
		r.TimeoutSeconds = *w.TimeoutSeconds
	}
	r.Backend, r.Reachable = c.WebhookBackend(ctx, w.ClientConfig)
	if r.Reachable {
		r.Detail += "; its backend is reachable"
	} else {
		r.Detail += "; its backend is not reachable"
	}
	return r
}

// intercepts reports whether webhook w applies to operation on the object id in a namespace with
// nsLabels: one of its rules names the operation and the object's group, and its namespace
// selector matches.
func intercepts(w admissionv1.ValidatingWebhook, id resource.Identity, operation string, nsLabels labels.Set) bool {
	ruleMatch := false
	for _, r := range w.Rules {
		ops := slices.ContainsFunc(r.Operations, func(o admissionv1.OperationType) bool {
			return o == admissionv1.OperationAll || string(o) == operation
		})
		groups := slices.Contains(r.APIGroups, "*") || slices.Contains(r.APIGroups, id.Group)
		if ops && groups {
			ruleMatch = true
		}
	}
	if !ruleMatch {
		return false
	}
	if w.NamespaceSelector == nil || id.Namespace == "" {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
	return err == nil && sel.Matches(nsLabels)
}

// WebhookBackend names a webhook's backend and says whether it can answer: a service with ready
// endpoints, or a URL that accepts connections.
func (c *Client) WebhookBackend(ctx context.Context, cc admissionv1.WebhookClientConfig) (string, bool) {
	if s := cc.Service; s != nil {
		name := "service " + s.Namespace + "/" + s.Name
		gvr := discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
		list, err := c.dynamic.Resource(gvr).Namespace(s.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=" + s.Name,
		})
		if err != nil {
			return name + " (endpoints unreadable: " + err.Error() + ")", false
		}
		for _, item := range list.Items {
			var slice discoveryv1.EndpointSlice
			if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &slice) != nil {
				continue
			}
			for _, e := range slice.Endpoints {
				if e.Conditions.Ready == nil || *e.Conditions.Ready {
					return name + " (has ready endpoints)", true
				}
			}
		}
		return name + " (no ready endpoints)", false
	}
	if cc.URL == nil {
		return "unknown", false
	}
	u, err := url.Parse(*cc.URL)
	if err != nil {
		return *cc.URL, false
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", host)
	if err != nil {
		return *cc.URL + " (" + err.Error() + ")", false
	}
	conn.Close()
	return *cc.URL + " (accepts connections)", true
}
