package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/sequence"
)

// prepared are the objects of a manifest made ready to apply: normalized, owned by the release,
// with the CRDs the release itself defines.
type prepared struct {
	// crds are the charts' crds/ files: as in Helm, they are created when missing and otherwise
	// left alone, and belong to no release (several releases of a chart share them).
	crds []*unstructured.Unstructured
	// objects are the release's resources, marked as its own.
	objects []*unstructured.Unstructured
	// facts are the records of the operation's objects: prepare adds the CRDs and objects above,
	// the survey step the recorded and live objects and the dry run's answers, the plan step
	// what the plan does to each; the preflight, the preview and the engine read them.
	facts plan.Objects
	// pendingKinds are kinds defined by CRDs of this release that the API server does not serve
	// yet: their objects cannot be validated before the CRDs are installed.
	pendingKinds map[schema.GroupKind]bool
}

// prepare normalizes objs for the release and marks them as its own. Objects of kinds that the
// API server does not know are an error unless a CRD among crds or objs defines them.
func prepare(c Cluster, name, namespace string, crds, objs []*unstructured.Unstructured) (*prepared, error) {
	defined := map[schema.GroupKind]string{} // kind -> scope, from the release's own CRDs
	for _, obj := range append(append([]*unstructured.Unstructured{}, crds...), objs...) {
		if !resource.IdentityOf(obj).IsCRD() {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", resource.IdentityOf(obj), err)
		}
		defined[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = string(crd.Spec.Scope)
	}
	p := &prepared{pendingKinds: map[schema.GroupKind]bool{}}
	var errs []error
	for i, in := range append(append([]*unstructured.Unstructured{}, crds...), objs...) {
		obj := in.DeepCopy()
		err := c.Normalize(obj, namespace)
		if cluster.IsUnknownKind(err) {
			gk := obj.GroupVersionKind().GroupKind()
			scope, ok := defined[gk]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: %w", resource.IdentityOf(obj), err))
				continue
			}
			p.pendingKinds[gk] = true
			if scope == string(apiextensionsv1.ClusterScoped) {
				obj.SetNamespace("")
			} else if obj.GetNamespace() == "" {
				obj.SetNamespace(namespace)
			}
		} else if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", resource.IdentityOf(obj), err))
			continue
		}
		sequence.Strip(obj)
		p.facts.Desire(obj, i < len(crds))
		if i < len(crds) {
			p.crds = append(p.crds, obj)
			continue
		}
		resource.SetOwnership(obj, name, namespace)
		p.objects = append(p.objects, obj)
	}
	// A readiness annotation that cannot be read fails the operation before anything changes.
	for _, obj := range append(slices.Clone(p.crds), p.objects...) {
		if err := readiness.CheckAnnotations(obj); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", resource.IdentityOf(obj), err))
		}
	}
	return p, errors.Join(errs...)
}

// live returns the metadata of each object that exists (all an operation needs of what is there:
// owner annotations, keep policy, UID, resourceVersion, managed fields).
func live(ctx context.Context, c Cluster, objs []*unstructured.Unstructured) (map[resource.Identity]*unstructured.Unstructured, error) {
	ids := make([]resource.Identity, len(objs))
	for i, obj := range objs {
		ids[i] = resource.IdentityOf(obj)
	}
	return c.Live(ctx, ids)
}

// survey is what berth learns of the cluster before it changes anything: the live objects and
// the objects as the API server's dry run returns them (server-side), which it writes into the
// records of the objects (plan.Object.Live and Applied), the CRDs of the chart that are missing,
// and whether the API server accepts every object. Each has its error.
type survey struct {
	crds            []*unstructured.Unstructured
	liveErr, crdErr error
	validationErr   error
	// replaced are the objects the operation deletes and creates again (--force-replace): the
	// API server refuses to change their immutable fields.
	replaced []resource.Identity
}

// surveyCluster reads the live objects, whole, and validates the prepared objects that berth's
// apply would change (the others need no dry run: nothing is sent for them). It reads the objects
// of recorded (the revisions the operation replaces) and the prepared objects among them before
// the dry runs; the prepared objects new to the release are dry-run first, and read only when
// their dry run does not show them missing (splitReads): the records end up with every object
// of either that exists, as if all were read first. The CRDs it updates (o.replaceCRDs) are among
// the live objects; the objects whose immutable fields change are replaced with o.forceReplace,
// and refused otherwise (settleImmutable). The records (p.facts) are written only when every
// live object was read (no liveErr).
func surveyCluster(ctx context.Context, c Cluster, p *prepared, recorded []*unstructured.Unstructured, o surveyOptions) survey {
	var s survey
	first, later := p.splitReads(recorded, o.readAll)
	var before, liveCRDs, answered, applied map[resource.Identity]*unstructured.Unstructured
	var refused map[resource.Identity]*ImmutableFieldError
	var wg sync.WaitGroup
	wg.Go(func() { before, s.liveErr = c.LiveObjects(ctx, first) })
	wg.Go(func() { s.crds, liveCRDs, s.crdErr = p.crdsToApply(ctx, c, o.replaceCRDs) })
	wg.Wait()
	if s.crdErr == nil {
		// Objects berth's apply would leave as they are need no dry run: nothing is sent for them.
		live := maps.Clone(before)
		if live == nil {
			live = map[resource.Identity]*unstructured.Unstructured{}
		}
		maps.Copy(live, liveCRDs)
		answered, refused, s.validationErr = preflight(ctx, c, p, s.crds, p.appliedAsIs(s.crds, live))
		if s.validationErr == nil {
			applied = answered
		}
	}
	if s.liveErr == nil {
		if before == nil {
			before = map[resource.Identity]*unstructured.Unstructured{}
		}
		s.liveErr = readExisting(ctx, c, later, answered, before)
	}
	if s.liveErr == nil {
		maps.Copy(before, liveCRDs)
		p.facts.Survey(before, applied)
		s.settleImmutable(ctx, c, p, refused, o.forceReplace)
	}
	return s
}

// splitReads divides the objects the survey reads. first are read before the dry runs: the
// objects of recorded (each at the API version of its prepared copy, when it has one), and the
// prepared objects new to the release that cost no request of their own (of a kind not served
// yet, whose objects Live leaves out; or listed with recorded objects of their resource and
// namespace: cluster.ListThreshold), or all of them with readAll. later are the other new
// objects: their dry run says whether they exist (readExisting).
func (p *prepared) splitReads(recorded []*unstructured.Unstructured, readAll bool) (first, later []*unstructured.Unstructured) {
	type group struct {
		gk        schema.GroupKind
		namespace string
	}
	groupOf := func(obj *unstructured.Unstructured) group {
		return group{gk: obj.GroupVersionKind().GroupKind(), namespace: obj.GetNamespace()}
	}
	known := make(map[resource.Identity]bool, len(recorded))
	counts := map[group][2]int{} // recorded, new
	for _, obj := range recorded {
		known[resource.IdentityOf(obj)] = true
		n := counts[groupOf(obj)]
		n[0]++
		counts[groupOf(obj)] = n
	}
	for _, obj := range p.objects {
		if !known[resource.IdentityOf(obj)] {
			n := counts[groupOf(obj)]
			n[1]++
			counts[groupOf(obj)] = n
		}
	}
	var ours []*unstructured.Unstructured
	for _, obj := range p.objects {
		g := groupOf(obj)
		n := counts[g]
		listed := g.namespace != "" && n[0] > 0 && n[0]+n[1] >= cluster.ListThreshold
		if readAll || known[resource.IdentityOf(obj)] || p.pendingKinds[g.gk] || listed {
			ours = append(ours, obj)
			continue
		}
		later = append(later, obj)
	}
	return union(ours, recorded), later
}

// readExisting reads the objects of later that may exist: all but those whose dry run
// (answered) created them, with no resourceVersion: nothing stored, the object is missing. Those
// it finds join before.
func readExisting(ctx context.Context, c Cluster, later []*unstructured.Unstructured, answered, before map[resource.Identity]*unstructured.Unstructured) error {
	var read []*unstructured.Unstructured
	for _, obj := range later {
		if a := answered[resource.IdentityOf(obj)]; a == nil || a.GetResourceVersion() != "" {
			read = append(read, obj)
		}
	}
	if len(read) == 0 {
		return nil
	}
	found, err := c.LiveObjects(ctx, read)
	maps.Copy(before, found)
	return err
}

// unchanged returns the objects the engine leaves alone (engine.Options.Unchanged): those that
// exist and that berth's apply would leave exactly as they are, as found before the first write,
// either from the live object itself (cluster.AppliedAsIs: no dry run was sent) or because their
// dry run returned the live object as it is, resourceVersion and managed fields included. CRDs
// are among them: one left as it is defines its kinds as before. It leaves out every object
// whose apply may do more than that showed: all with --take-ownership, objects whose Helm fields
// are adopted first, objects replaced, and objects of kinds not served yet (never dry run).
func (s survey) unchanged(p *prepared, takeOwnership bool) map[resource.Identity]bool {
	if takeOwnership {
		return nil
	}
	out := map[resource.Identity]bool{}
	for _, obj := range slices.Concat(s.crds, p.objects) {
		id := resource.IdentityOf(obj)
		var applied, before *unstructured.Unstructured
		if f := p.facts.Get(id); f != nil {
			applied, before = f.Applied, f.Live
		}
		if applied != nil && before != nil && before.GetResourceVersion() != "" && !cluster.SetByHelm(before) &&
			!p.pendingKinds[obj.GroupVersionKind().GroupKind()] && !slices.Contains(s.replaced, id) &&
			equality.Semantic.DeepEqual(applied.Object, before.Object) {
			out[id] = true
		}
	}
	return out
}

// OwnershipError says an object exists but belongs to someone else.
type OwnershipError struct {
	ID                 resource.Identity
	Release, Namespace string // the owner per Helm's metadata; empty when there is none
}

func (e *OwnershipError) Error() string {
	owner := "no release (it has no Helm ownership metadata)"
	if e.Release != "" {
		owner = fmt.Sprintf("release %q in namespace %q", e.Release, e.Namespace)
	}
	return fmt.Sprintf("%s exists and belongs to %s", e.ID, owner)
}

// checkOwnership refuses objects that exist and are not the release's own, and the CRDs of
// crds/ that the operation updates (crds) that another release owns, by the owner the survey
// recorded of each (plan.Object.Owner).
func checkOwnership(name, namespace string, desired, crds []*unstructured.Unstructured, facts *plan.Objects, take bool) error {
	if take {
		return nil
	}
	return errors.Join(checkObjectOwnership(name, namespace, desired, facts), checkCRDOwnership(name, namespace, crds, facts))
}

// checkCRDOwnership refuses the CRDs of crds/ that the operation updates (crds) and that exist
// owned by another release, per Helm's ownership metadata. A CRD with none (Helm installs those
// of crds/ without any, as berth does, and one made by hand has none either) is not refused:
// several releases of a chart share its crds/.
func checkCRDOwnership(name, namespace string, crds []*unstructured.Unstructured, facts *plan.Objects) error {
	var errs []error
	for _, crd := range crds {
		f := facts.Get(resource.IdentityOf(crd))
		if f == nil || f.Live == nil {
			continue
		}
		if owner := f.Owner; owner != (plan.Owner{}) && owner != (plan.Owner{Release: name, Namespace: namespace}) {
			errs = append(errs, &OwnershipError{ID: f.ID, Release: owner.Release, Namespace: owner.Namespace})
		}
	}
	return errors.Join(errs...)
}

// checkObjectOwnership refuses objects of the release that exist and are not its own.
func checkObjectOwnership(name, namespace string, desired []*unstructured.Unstructured, facts *plan.Objects) error {
	var errs []error
	for _, obj := range desired {
		f := facts.Get(resource.IdentityOf(obj))
		if f == nil || f.Live == nil || f.Owner == (plan.Owner{Release: name, Namespace: namespace}) {
			continue
		}
		errs = append(errs, &OwnershipError{ID: f.ID, Release: f.Owner.Release, Namespace: f.Owner.Namespace})
	}
	return errors.Join(errs...)
}

// preflight runs every object (and the CRDs to create) through the API server's validation and
// admission with a server-side dry run, so that an operation that cannot succeed fails before its
// first change. It returns the objects as the dry run returned them (those it answered, also
// when others failed) and, apart from the other refusals (the error), the objects whose changes
// the API server refuses as immutable.
func preflight(ctx context.Context, c Cluster, p *prepared, crds []*unstructured.Unstructured,
	asIs map[resource.Identity]*unstructured.Unstructured) (map[resource.Identity]*unstructured.Unstructured,
	map[resource.Identity]*ImmutableFieldError, error) {
	var checked []*unstructured.Unstructured
	for _, obj := range append(slices.Clone(crds), p.objects...) {
		if !p.pendingKinds[obj.GroupVersionKind().GroupKind()] && asIs[resource.IdentityOf(obj)] == nil {
			checked = append(checked, obj)
		}
	}
	applied := maps.Clone(asIs)
	refused := map[resource.Identity]*ImmutableFieldError{}
	var mu sync.Mutex
	err := forEach(ctx, checked, func(ctx context.Context, obj *unstructured.Unstructured) error {
		out, err := c.Apply(ctx, obj, cluster.ApplyOptions{DryRun: true})
		mu.Lock()
		defer mu.Unlock()
		if fields := immutableFields(err); fields != nil {
			id := resource.IdentityOf(obj)
			refused[id] = &ImmutableFieldError{ID: id, Fields: fields, Err: err}
			return nil
		}
		if err == nil {
			applied[resource.IdentityOf(obj)] = out
		}
		return err
	})
	if err != nil {
		return applied, refused, &ValidationError{Err: err}
	}
	return applied, refused, nil
}

// appliedAsIs returns, of the CRDs of crds/ the operation applies (crds) and the prepared
// objects, the live ones berth's apply would leave exactly as they are (cluster.AppliedAsIs):
// their dry run would return them unchanged, so none is made.
func (p *prepared) appliedAsIs(crds []*unstructured.Unstructured, live map[resource.Identity]*unstructured.Unstructured) map[resource.Identity]*unstructured.Unstructured {
	out := map[resource.Identity]*unstructured.Unstructured{}
	for _, obj := range slices.Concat(crds, p.objects) {
		id := resource.IdentityOf(obj)
		if l := live[id]; l != nil && !p.pendingKinds[obj.GroupVersionKind().GroupKind()] && cluster.AppliedAsIs(obj, l) {
			out[id] = l
		}
	}
	return out
}

// adoptedFromHelm returns the desired objects (CRDs included) that exist with fields of Helm's
// client-side apply or of berth's former field manager (cluster.SetByHelm).
func adoptedFromHelm(desired []*unstructured.Unstructured, facts *plan.Objects) []*unstructured.Unstructured {
	var adopted []*unstructured.Unstructured
	for _, obj := range desired {
		if b := facts.LiveOf(resource.IdentityOf(obj)); b != nil && cluster.SetByHelm(b) {
			adopted = append(adopted, obj)
		}
	}
	return adopted
}

// missingCRDs returns the CRDs from crds/ that the cluster does not have yet: the only ones
// berth creates.
func (p *prepared) missingCRDs(ctx context.Context, c Cluster) ([]*unstructured.Unstructured, error) {
	existing, err := live(ctx, c, p.crds)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, crd := range p.crds {
		if existing[resource.IdentityOf(crd)] == nil {
			out = append(out, crd)
		}
	}
	return out, nil
}

// union returns the objects of a and b, each identity once (a's copy first).
func union(a, b []*unstructured.Unstructured) []*unstructured.Unstructured {
	seen := map[resource.Identity]bool{}
	var out []*unstructured.Unstructured
	for _, obj := range append(append([]*unstructured.Unstructured{}, a...), b...) {
		id := resource.IdentityOf(obj)
		if !seen[id] {
			seen[id] = true
			out = append(out, obj)
		}
	}
	return out
}
