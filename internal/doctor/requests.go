package doctor

import (
	"maps"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/internal/resource"
)

// Request is one request an operation makes of the API server, as admission sees it: the
// operation, the object and, for an update, the object as it was. The preflight decides from the
// requests which webhooks the API server will call.
type Request struct {
	Operation admissionv1.OperationType
	// Object is the object sent (CREATE, UPDATE) or deleted (DELETE). Its namespace is set for a
	// namespaced object.
	Object *unstructured.Unstructured
	// Old is the object as it is before an UPDATE (its metadata is enough); nil otherwise. An
	// objectSelector matches an update when it matches either.
	Old *unstructured.Unstructured
	// SpecChanged says an UPDATE changes the object's spec, so that a workload's controller
	// replaces its Pods. An UPDATE that leaves the spec alone creates none.
	SpecChanged bool
	// By is the object whose controller makes this request (a Deployment for its Pods); zero when
	// the operation makes it itself.
	By resource.Identity
	// What says in words what the request is about, for findings ("the record of revision 2");
	// empty means the object itself.
	What string
}

// Subject says what the request is about: the object, or what a workload's controller makes of
// it ("Deployment.apps/shop/web's Pods").
func (q Request) Subject() string {
	if q.What != "" {
		return q.What
	}
	return resource.IdentityOf(q.Object).String()
}

// workloadPods are the kinds whose controllers make Pods from a pod template, with the path of
// the template.
var workloadPods = map[schema.GroupKind][]string{
	{Group: "apps", Kind: "Deployment"}:  {"spec", "template"},
	{Group: "apps", Kind: "ReplicaSet"}:  {"spec", "template"},
	{Group: "apps", Kind: "StatefulSet"}: {"spec", "template"},
	{Group: "apps", Kind: "DaemonSet"}:   {"spec", "template"},
	{Group: "batch", Kind: "Job"}:        {"spec", "template"},
	{Kind: "ReplicationController"}:      {"spec", "template"},
}

var (
	deploymentKind = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	cronJobKind    = schema.GroupKind{Group: "batch", Kind: "CronJob"}
	podKind        = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	replicaSetKind = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
	jobKind        = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
)

// WithControllers returns reqs followed by the requests the controllers of the workloads in them
// make as a result: the Pods a Deployment, StatefulSet, DaemonSet, Job (and the like) creates from
// its template when it is created or its spec changes, and deletes when it is deleted or rolled
// out; a Deployment's ReplicaSets; a CronJob's Jobs and their Pods.
func WithControllers(reqs []Request) []Request {
	out := append([]Request(nil), reqs...)
	for _, q := range reqs {
		out = append(out, controlled(q)...)
	}
	return out
}

// controlled returns the requests the controller of q's object makes because of q.
func controlled(q Request) []Request {
	if q.Object == nil || q.Operation == admissionv1.Update && !q.SpecChanged {
		return nil
	}
	obj := q.Object
	id := resource.IdentityOf(obj)
	gk := id.GroupKind()
	// The operations a controller makes of what it owns: a new workload creates, a deleted one
	// has its dependents deleted by the garbage collector, a changed one replaces them.
	var ops []admissionv1.OperationType
	switch q.Operation {
	case admissionv1.Create:
		ops = []admissionv1.OperationType{admissionv1.Create}
	case admissionv1.Delete:
		ops = []admissionv1.OperationType{admissionv1.Delete}
	default:
		ops = []admissionv1.OperationType{admissionv1.Create, admissionv1.Delete}
	}
	var out []Request
	add := func(gvk schema.GroupVersionKind, tmpl map[string]any, what string) {
		if tmpl == nil {
			return
		}
		made := &unstructured.Unstructured{Object: map[string]any{}}
		made.SetGroupVersionKind(gvk)
		made.SetNamespace(obj.GetNamespace())
		made.SetGenerateName(obj.GetName() + "-")
		if m, ok := tmpl["metadata"].(map[string]any); ok {
			l, _, _ := unstructured.NestedStringMap(m, "labels")
			made.SetLabels(l)
			a, _, _ := unstructured.NestedStringMap(m, "annotations")
			made.SetAnnotations(a)
		}
		if spec, ok := tmpl["spec"]; ok {
			made.Object["spec"] = spec
		}
		for _, op := range ops {
			out = append(out, Request{Operation: op, Object: made, By: id, What: id.String() + "'s " + what})
		}
	}
	switch {
	case gk == cronJobKind:
		jt, _, _ := unstructured.NestedMap(obj.Object, "spec", "jobTemplate")
		add(jobKind, jt, "Jobs")
		pt, _, _ := unstructured.NestedMap(obj.Object, "spec", "jobTemplate", "spec", "template")
		add(podKind, pt, "Pods")
	case workloadPods[gk] != nil:
		pt, _, _ := unstructured.NestedMap(obj.Object, workloadPods[gk]...)
		if gk == deploymentKind {
			// A Deployment's ReplicaSets carry its template's labels.
			rs := map[string]any{}
			if m, ok := pt["metadata"].(map[string]any); ok {
				rs["metadata"] = maps.Clone(m)
			}
			add(replicaSetKind, rs, "ReplicaSets")
		}
		add(podKind, pt, "Pods")
	}
	return out
}

// HookRequests are the requests running hook h makes: its object created, and deleted after its
// outcome when a delete policy says so (before-hook-creation deletes only one left by an earlier
// run, which the next run finds).
func HookRequests(h resource.Hook) []Request {
	out := []Request{{Operation: admissionv1.Create, Object: h.Object}}
	if h.HasDeletePolicy(resource.HookSucceeded) || h.HasDeletePolicy(resource.HookFailed) {
		out = append(out, Request{Operation: admissionv1.Delete, Object: h.Object})
	}
	return out
}
