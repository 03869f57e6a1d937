package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// CRDPolicy says what an install or upgrade does with the CustomResourceDefinitions of its
// chart's crds/ directories. They belong to no release, and none is ever deleted.
type CRDPolicy string

const (
	// CRDsDefault is Helm's behaviour: CRDsCreate on install, CRDsSkip on upgrade.
	CRDsDefault CRDPolicy = ""
	// CRDsSkip leaves crds/ alone: objects of kinds its CRDs define need those CRDs installed
	// already.
	CRDsSkip CRDPolicy = "skip"
	// CRDsCreate creates the CRDs that do not exist and leaves the others as they are.
	CRDsCreate CRDPolicy = "create"
	// CRDsCreateReplace creates the CRDs that do not exist and updates the others, once an
	// update is known not to drop a stored version nor change what names their objects.
	CRDsCreateReplace CRDPolicy = "create-replace"
)

// CRDPolicies are the policies a caller may ask for, in the order people read them.
var CRDPolicies = []CRDPolicy{CRDsSkip, CRDsCreate, CRDsCreateReplace}

// of is the policy an operation op applies: p, or when p is the default, Helm's for op.
func (p CRDPolicy) of(op release.Operation) CRDPolicy {
	switch {
	case p != CRDsDefault:
		return p
	case op == release.OpInstall:
		return CRDsCreate
	}
	return CRDsSkip
}

// crdsFor returns the CRDs of crds/ that operation op prepares with policy p: none when it skips
// them (objects of kinds they alone define are then unknown kinds, as in Helm).
func crdsFor(p CRDPolicy, op release.Operation, crds []*unstructured.Unstructured) []*unstructured.Unstructured {
	if p.of(op) == CRDsSkip {
		return nil
	}
	return crds
}

// CRDsSkippedError says objects of the release are of kinds that only the CRDs of the chart's
// crds/ define, which the operation leaves alone (Policy, the default of an upgrade): nothing
// was changed. CRDs are the CRDs that define them.
type CRDsSkippedError struct {
	Operation release.Operation
	CRDs      []string
	Err       error
}

func (e *CRDsSkippedError) Error() string {
	return fmt.Sprintf("%v\nthe chart's crds/ defines these kinds (%s), and this %s leaves crds/ alone", e.Err, strings.Join(e.CRDs, ", "), e.Operation)
}

func (e *CRDsSkippedError) Unwrap() error { return e.Err }

// skippedCRDs says, of err from preparing the objects of operation op with policy p, which of
// the chart's crds define the kinds err finds unknown, when p skips them.
func skippedCRDs(err error, p CRDPolicy, op release.Operation, crds []*unstructured.Unstructured) error {
	var uk *cluster.UnknownKindError
	if err == nil || p.of(op) != CRDsSkip || !errors.As(err, &uk) {
		return err
	}
	var names []string
	for _, obj := range crds {
		var crd apiextensionsv1.CustomResourceDefinition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &crd) != nil {
			continue
		}
		if crd.Spec.Group == uk.GVK.Group && crd.Spec.Names.Kind == uk.GVK.Kind {
			names = append(names, crd.Name)
		}
	}
	if len(names) == 0 {
		return err
	}
	return &CRDsSkippedError{Operation: op, CRDs: names, Err: err}
}

// crdsToApply returns the CRDs from crds/ that the operation applies: the missing ones, and with
// replace the existing ones too, each checked first against what an update may not change
// (checkCRDUpdate). With replace it also returns the live CRDs, whole, by identity.
func (p *prepared) crdsToApply(ctx context.Context, c Cluster, replace bool) ([]*unstructured.Unstructured, map[resource.Identity]*unstructured.Unstructured, error) {
	if !replace || len(p.crds) == 0 {
		crds, err := p.missingCRDs(ctx, c)
		if err == nil {
			err = p.waitServed(ctx, c, crds)
		}
		return crds, nil, err
	}
	live, err := c.LiveObjects(ctx, p.crds)
	if err != nil {
		return nil, nil, err
	}
	var out []*unstructured.Unstructured
	var errs []error
	for _, crd := range p.crds {
		if l := live[resource.IdentityOf(crd)]; l != nil {
			if err := checkCRDUpdate(l, crd); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		out = append(out, crd)
	}
	if len(errs) > 0 {
		return nil, nil, &ValidationError{Err: errors.Join(errs...)}
	}
	return out, live, nil
}

// waitServed waits until the CRDs of crds/ that exist (all but missing, which the operation
// creates and then waits for) and define kinds the API server did not serve when the operation
// prepared its objects are Established and their kinds served, as for a CRD the operation
// creates: another operation (another release of the same chart, installed at once) may have
// created them a moment before.
func (p *prepared) waitServed(ctx context.Context, c Cluster, missing []*unstructured.Unstructured) error {
	var ids []resource.Identity
	for _, crd := range p.crds {
		if slices.Contains(missing, crd) {
			continue
		}
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		if p.pendingKinds[schema.GroupKind{Group: group, Kind: kind}] {
			ids = append(ids, resource.IdentityOf(crd))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := c.WaitReady(ctx, ids, readiness.Options{}, nil); err != nil {
		return &CRDNotServedError{CRDs: ids, Err: err}
	}
	return nil
}

// CRDNotServedError says CRDs of crds/ that exist, created by someone else, were not
// Established and their kinds served within the operation's time.
type CRDNotServedError struct {
	CRDs []resource.Identity
	Err  error
}

func (e *CRDNotServedError) Error() string {
	names := make([]string, len(e.CRDs))
	for i, id := range e.CRDs {
		names[i] = id.String()
	}
	return fmt.Sprintf("CustomResourceDefinitions of crds/ exist but are not served yet (%s): %v", strings.Join(names, ", "), e.Err)
}

func (e *CRDNotServedError) Unwrap() error { return e.Err }

// CRDUpdateError says berth refuses to update a CustomResourceDefinition from crds/: the update
// drops Version, which the CRD's status.storedVersions lists (objects may be stored in it, and
// could no longer be read), or it changes Field (spec.group, spec.scope or spec.names.kind) from
// Live to Desired, which would make its objects other objects.
type CRDUpdateError struct {
	CRD     resource.Identity
	Version string
	Field   string
	Live    string
	Desired string
}

func (e *CRDUpdateError) Error() string {
	if e.Version != "" {
		return fmt.Sprintf("%s: update refused: it drops version %s, which status.storedVersions lists (objects may be stored as %s)",
			e.CRD, e.Version, e.Version)
	}
	return fmt.Sprintf("%s: update refused: it changes %s from %q to %q", e.CRD, e.Field, e.Live, e.Desired)
}

// checkCRDUpdate refuses an update of the live CRD to desired that drops a version listed in
// status.storedVersions or changes spec.group, spec.scope or spec.names.kind.
func checkCRDUpdate(live, desired *unstructured.Unstructured) error {
	id := resource.IdentityOf(desired)
	var l, d apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &l); err != nil {
		return fmt.Errorf("%s: live: %w", id, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(desired.Object, &d); err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	var errs []error
	for _, f := range []struct{ field, live, desired string }{
		{"spec.group", l.Spec.Group, d.Spec.Group},
		{"spec.scope", string(l.Spec.Scope), string(d.Spec.Scope)},
		{"spec.names.kind", l.Spec.Names.Kind, d.Spec.Names.Kind},
	} {
		if f.live != f.desired {
			errs = append(errs, &CRDUpdateError{CRD: id, Field: f.field, Live: f.live, Desired: f.desired})
		}
	}
	for _, v := range l.Status.StoredVersions {
		if !slices.ContainsFunc(d.Spec.Versions, func(dv apiextensionsv1.CustomResourceDefinitionVersion) bool { return dv.Name == v }) {
			errs = append(errs, &CRDUpdateError{CRD: id, Version: v})
		}
	}
	return errors.Join(errs...)
}
