package plan

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

// Object is what an operation knows of one object, in one record from its survey to its
// execution or preview: the operation prepares it, surveys it, plans it, and the engine and the
// preview read it.
type Object struct {
	ID resource.Identity
	// Desired is the object as the operation applies it: rendered (or recorded), normalized
	// and, unless it is a CRD of crds/, owned by the release. Nil for an object the operation
	// only deletes or keeps.
	Desired *unstructured.Unstructured
	// CRD says Desired is a CRD of the charts' crds/ files, which belongs to no release.
	CRD bool
	// Recorded is the object as the revisions the operation replaces recorded it; nil for an
	// object new to the release.
	Recorded *unstructured.Unstructured
	// Live is the object as the survey found it, before the first change; nil when it is
	// missing or was not read.
	Live *unstructured.Unstructured
	// Applied is the object as the API server's dry run of berth's apply returned it (or the
	// live object itself, where the apply would leave it as it is); nil when it was not
	// dry-run.
	Applied *unstructured.Unstructured
	// Change is what the plan does to the object; empty until it is planned.
	Change Change
	// Ready is the readiness rule the object's annotations declare (HIP-0025's
	// helm.sh/readiness-success and -failure); the zero Ready is the default rule of its kind.
	Ready Readiness
	// Owner is the release that owns the live object per Helm's metadata, and Adopted says
	// berth takes over fields Helm's client-side apply set on it first.
	Owner   Owner
	Adopted bool
}

// Owner is the release an object belongs to, per Helm's ownership metadata; the zero Owner is
// none.
type Owner struct {
	Release, Namespace string
}

// Readiness is an object's own readiness rule: the JSON arrays of expressions of its
// readiness annotations, as written (readiness.CheckAnnotations reads them).
type Readiness struct {
	Success, Failure string
}

// Objects are the records of an operation's objects, each identity once, in the order they
// were first added.
type Objects struct {
	byID  map[resource.Identity]*Object
	order []resource.Identity
	// recorded are the identities of the recorded objects, in the order they were recorded.
	recorded []resource.Identity
}

// At returns the record of id, adding an empty one when there is none.
func (o *Objects) At(id resource.Identity) *Object {
	if f := o.byID[id]; f != nil {
		return f
	}
	if o.byID == nil {
		o.byID = map[resource.Identity]*Object{}
	}
	f := &Object{ID: id}
	o.byID[id] = f
	o.order = append(o.order, id)
	return f
}

// Get returns the record of id, or nil; a nil Objects has none.
func (o *Objects) Get(id resource.Identity) *Object {
	if o == nil {
		return nil
	}
	return o.byID[id]
}

// All returns every record, in order.
func (o *Objects) All() []*Object {
	if o == nil {
		return nil
	}
	out := make([]*Object, len(o.order))
	for i, id := range o.order {
		out[i] = o.byID[id]
	}
	return out
}

// Desire records obj as the object the operation applies.
func (o *Objects) Desire(obj *unstructured.Unstructured, crd bool) {
	f := o.At(resource.IdentityOf(obj))
	f.Desired, f.CRD = obj, crd
	a := obj.GetAnnotations()
	f.Ready = Readiness{Success: a[readiness.AnnotationSuccess], Failure: a[readiness.AnnotationFailure]}
}

// Record records objs as the objects of the revisions replaced; the first of an identity wins.
func (o *Objects) Record(objs []*unstructured.Unstructured) {
	for _, obj := range objs {
		if f := o.At(resource.IdentityOf(obj)); f.Recorded == nil {
			f.Recorded = obj
			o.recorded = append(o.recorded, f.ID)
		}
	}
}

// Survey records what the survey found: the live objects (live) and the objects as the dry run
// returned them (applied). Their owner is read from the live objects.
func (o *Objects) Survey(live, applied map[resource.Identity]*unstructured.Unstructured) {
	for id, l := range live {
		f := o.At(id)
		f.Live = l
		if rel, ns, ok := resource.OwnedBy(l); ok {
			f.Owner = Owner{Release: rel, Namespace: ns}
		}
	}
	for id, a := range applied {
		o.At(id).Applied = a
	}
}

// Planned records, from p, what the plan does to each object: the Change its steps make (an
// apply creates or configures, as the live object says; a delete deletes; a kept object is
// kept) and which objects it adopts.
func (o *Objects) Planned(p *Plan) {
	if p == nil {
		return
	}
	for _, step := range p.Steps {
		for _, id := range step.Objects {
			switch step.Action {
			case Apply:
				f := o.At(id)
				f.Change = Configured
				if f.Live == nil {
					f.Change = Created
				}
			case Delete:
				o.At(id).Change = Deleted
			case Adopt:
				o.At(id).Adopted = true
			}
		}
	}
	for _, id := range p.Kept {
		o.At(id).Change = Kept
	}
}

// Live returns the live objects the survey found, by identity.
func (o *Objects) Live() map[resource.Identity]*unstructured.Unstructured {
	return o.view(func(f *Object) *unstructured.Unstructured { return f.Live })
}

// RecordedObjects returns the recorded objects, in the order they were recorded.
func (o *Objects) RecordedObjects() []*unstructured.Unstructured {
	if o == nil {
		return nil
	}
	var out []*unstructured.Unstructured
	for _, id := range o.recorded {
		out = append(out, o.byID[id].Recorded)
	}
	return out
}

// LiveOf returns the live object of id as the survey found it, or nil.
func (o *Objects) LiveOf(id resource.Identity) *unstructured.Unstructured {
	if f := o.Get(id); f != nil {
		return f.Live
	}
	return nil
}

// Named returns the object of id as the operation names it in its requests: as it applies it,
// else as it was recorded; nil when it has neither.
func (o *Objects) Named(id resource.Identity) *unstructured.Unstructured {
	f := o.Get(id)
	switch {
	case f == nil:
		return nil
	case f.Desired != nil:
		return f.Desired
	}
	return f.Recorded
}

func (o *Objects) view(field func(*Object) *unstructured.Unstructured) map[resource.Identity]*unstructured.Unstructured {
	out := map[resource.Identity]*unstructured.Unstructured{}
	for _, f := range o.All() {
		if obj := field(f); obj != nil {
			out[f.ID] = obj
		}
	}
	return out
}
