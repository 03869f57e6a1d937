package plan

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/sequence"
)

// buildOrdered adds to p, which holds the CRD steps, the steps of in ordered by in.Batches: each
// batch applied in the stages of Helm's install order and waited for before the next; then the deletions of what left the
// release. An uninstall deletes batch by batch in reverse, each waited for until gone.
func buildOrdered(in Input, p *Plan) (*Plan, error) {
	desired := map[resource.Identity]*unstructured.Unstructured{}
	seen := map[resource.Identity]bool{}
	for _, obj := range in.Desired {
		desired[resource.IdentityOf(obj)] = obj
		seen[resource.IdentityOf(obj)] = true
	}
	gone := p.gone(in, seen)
	if len(in.Desired) == 0 {
		return deleteOrdered(in, p, gone)
	}
	batches := batchesOf(in.Batches, desired)
	late := slices.Clone(in.Late)
	slices.SortFunc(late, resource.Compare)
	for i, b := range batches {
		id := batchID(i)
		what := fmt.Sprintf("batch %d of %d (%s)", i+1, len(batches), b.name)
		for _, stage := range resource.InstallStages(resource.SortForInstall(b.objects)) {
			kind := stageKind(stage)
			ids := identities(stage)
			if len(late) > 0 && slices.ContainsFunc(ids, func(id resource.Identity) bool { return slices.Contains(late, id) }) {
				p.Steps = append(p.Steps, Step{ID: "validate/late", Action: Validate, Objects: late,
					Reason: "objects of kinds the release's CRDs define, validated once those are Established; none is applied before all pass"})
				late = nil
			}
			p.Steps = append(p.Steps, Step{ID: "apply/" + id + "/" + kind, Action: Apply, Objects: ids,
				Reason: what + ", install order: " + describeKind(kind)})
			if crds := identities(slices.DeleteFunc(slices.Clone(stage), notCRD)); len(crds) > 0 {
				p.Steps = append(p.Steps, Step{ID: "wait-ready/" + id + "/" + crdKind, Action: WaitReady, Objects: crds,
					Reason: "CustomResourceDefinitions must be Established before they are used"})
			}
		}
		p.Steps = append(p.Steps, Step{ID: "wait-ready/" + id, Action: WaitReady, Objects: identities(b.objects),
			Reason: what + ": every object ready before the next batch"})
	}
	// What left the release goes at the end, in Helm's uninstall order, waited for: the
	// batches order what the chart has, not what it no longer has.
	p.waitAbsent(p.deleteGone(gone, in.Live), in.Live)
	return p, nil
}

// deleteOrdered adds to p the deletion of gone, batch by batch in reverse order, each waited
// for until gone before the batch before it.
func deleteOrdered(in Input, p *Plan, gone []*unstructured.Unstructured) (*Plan, error) {
	byID := map[resource.Identity]*unstructured.Unstructured{}
	for _, obj := range gone {
		byID[resource.IdentityOf(obj)] = obj
	}
	batches := batchesOf(in.Batches, byID)
	for i, b := range slices.Backward(batches) {
		id := batchID(i)
		what := fmt.Sprintf("batch %d of %d (%s), in reverse", i+1, len(batches), b.name)
		var ids []resource.Identity
		for _, stage := range resource.UninstallStages(resource.SortForUninstall(b.objects)) {
			kind := stageKind(stage)
			wids := identities(stage)
			ids = append(ids, wids...)
			p.Steps = append(p.Steps, Step{ID: "delete/" + id + "/" + kind, Action: Delete, Objects: wids, UIDs: uidsOf(wids, in.Live),
				Reason: what + ", uninstall order: " + describeKind(kind)})
		}
		p.Steps = append(p.Steps, Step{ID: "wait-absent/" + id, Action: WaitAbsent, Objects: ids, UIDs: uidsOf(ids, in.Live),
			Reason: what + ": every object gone before the batch before it"})
	}
	return p, nil
}

// batch is the objects of one batch that the plan acts on.
type batch struct {
	name    string
	objects []*unstructured.Unstructured
}

// batchesOf returns the objects of objs in the order of batches, without the batches that have
// none; an object no batch names joins the last.
func batchesOf(batches []sequence.Batch, objs map[resource.Identity]*unstructured.Unstructured) []batch {
	var out []batch
	placed := map[resource.Identity]bool{}
	for _, b := range batches {
		var in []*unstructured.Unstructured
		for _, id := range b.Objects {
			if obj := objs[id]; obj != nil && !placed[id] {
				in = append(in, obj)
				placed[id] = true
			}
		}
		if len(in) > 0 {
			out = append(out, batch{name: b.Name, objects: in})
		}
	}
	var rest []*unstructured.Unstructured
	for id, obj := range objs {
		if !placed[id] {
			rest = append(rest, obj)
		}
	}
	slices.SortFunc(rest, func(a, b *unstructured.Unstructured) int {
		return resource.Compare(resource.IdentityOf(a), resource.IdentityOf(b))
	})
	switch {
	case len(rest) == 0:
	case len(out) == 0:
		out = append(out, batch{name: "the release", objects: rest})
	default:
		out[len(out)-1].objects = append(out[len(out)-1].objects, rest...)
	}
	return out
}

// batchID is the step ID part of batch i (from 0).
func batchID(i int) string { return fmt.Sprintf("batch-%d", i+1) }
