package lifecycle

import (
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/sequence"
)

// batches orders the objects of revision rel as its chart declares (HIP-0025), when w asks for
// it: always with Ordered (--wait=ordered), with OrderIfDeclared when the chart declares any
// order. It returns nil when the release goes in Helm's order. An order that cannot be built (a
// cycle, an unknown group or subchart) is an error before anything changes.
func (o *operation) batches(rel *release.Release, w WaitOptions) ([]sequence.Batch, error) {
	if rel == nil || rel.Chart == nil || (!w.Ordered && !w.OrderIfDeclared) {
		return nil, nil
	}
	c := o.Cluster
	var objs []sequence.Object
	for _, doc := range resource.SplitManifest(rel.Manifest) {
		obj, err := o.documents().Document(doc)
		if err != nil {
			return nil, err
		}
		if obj == nil {
			continue
		}
		annotations := obj.GetAnnotations()
		if err := c.Normalize(obj, rel.Namespace); cluster.IsUnknownKind(err) {
			if obj.GetNamespace() == "" {
				obj.SetNamespace(rel.Namespace) // as prepare does for kinds the release defines
			}
		} else if err != nil {
			return nil, err
		}
		objs = append(objs, sequence.Object{ID: resource.IdentityOf(obj), Source: doc.Source, Annotations: annotations})
	}
	charts, err := sequence.ChartsOf(rel.Chart)
	if err != nil {
		return nil, err
	}
	if !w.Ordered && !sequence.Declared(objs, charts) {
		return nil, nil
	}
	return sequence.Order(objs, charts)
}
