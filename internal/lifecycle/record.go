package lifecycle

import (
	"context"
	"fmt"
	"time"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// contents are what a revision records of its chart: rendered now, or those of a recorded
// revision.
type contents struct {
	// rendered says the chart was read and rendered now, not copied from a recorded revision.
	rendered      bool
	chart         *chartv2.Chart
	config        map[string]any
	manifest      string
	hooks         []*release.Hook
	notes         string
	crds, objects []*unstructured.Unstructured
}

// entry is what a new revision's record says besides its contents.
type entry struct {
	labels map[string]string
	// firstDeployed is the release's; an install's revision is deployed first now.
	firstDeployed time.Time
	// description is the pending record's; empty for the operation's own.
	description string
	// rollbackTo is the revision a rollback goes back to.
	rollbackTo int
	// proof is the verification of a chart read now; nil when it was not verified.
	proof *release.Provenance
	// encrypted are the paths of the values from an encrypted values file, of a chart read now.
	encrypted [][]string
}

// pendingRevision is revision version of release name in namespace, with contents c, as operation
// op records it before anything changes: the one place a revision's record is made. A chart
// read now is recorded with the proof of its verification, or as not verified, and with the
// paths of its values from encrypted files, whatever it claims; one copied from a recorded
// revision keeps that revision's proof, with its labels, and its paths.
func (o *operation) pendingRevision(op release.Operation, name, namespace string, version int, c contents, e entry) (revision, error) {
	now := o.now()
	first := e.firstDeployed
	if op == release.OpInstall {
		first = now
	}
	description := e.description
	switch {
	case description != "":
	case op == release.OpInstall:
		description = "Initial install underway"
	case op == release.OpUpgrade:
		description = "Preparing upgrade"
	}
	rel := &release.Release{
		Name: name, Namespace: namespace, Version: version, Labels: e.labels,
		ApplyMethod: release.ApplyMethod,
		Chart:       c.chart, Config: c.config, Manifest: c.manifest, Hooks: c.hooks,
		Info: &release.Info{FirstDeployed: first, LastDeployed: now, Status: pendingStatus(op),
			Description: description, RollbackRevision: e.rollbackTo, Notes: c.notes},
	}
	if c.rendered {
		// Before the proof, whose seal holds the chart's metadata as recorded.
		if err := release.SetEncryptedValues(rel, e.encrypted); err != nil {
			return revision{}, err
		}
		if err := release.SetProvenance(rel, e.proof); err != nil {
			return revision{}, err
		}
	}
	return revision{rel: rel, crds: c.crds, objects: c.objects}, nil
}

// contentsOf are the contents of recorded revision rel, for a new revision that goes back to it:
// its hooks are copied, so that recording a new run leaves the old revision's alone.
func (o *operation) contentsOf(rel *release.Release) (contents, error) {
	objs, err := o.documents().Manifest(rel.Manifest)
	if err != nil {
		return contents{}, fmt.Errorf("release %s revision %d: recorded manifest: %w", rel.Name, rel.Version, err)
	}
	return contents{chart: rel.Chart, config: rel.Config, manifest: rel.Manifest, hooks: copyHooks(rel.Hooks),
		notes: rel.Info.Notes, objects: objs}, nil
}

// copyHooks copies hook records.
func copyHooks(hooks []*release.Hook) []*release.Hook {
	out := make([]*release.Hook, len(hooks))
	for i, h := range hooks {
		c := *h
		out[i] = &c
	}
	return out
}

// recordedObjects parses a recorded manifest and normalizes its objects. Objects whose kind is
// no longer served are skipped: there is nothing left of them to act on.
func (o *operation) recordedObjects(rel *release.Release) ([]*unstructured.Unstructured, error) {
	return o.recordedObjectsOf(o.documents(), rel)
}

// recordedObjectsOf is recordedObjects parsed through parsed: nil parses every document anew,
// keeping nothing.
func (o *operation) recordedObjectsOf(parsed *resource.Parsed, rel *release.Release) ([]*unstructured.Unstructured, error) {
	if rel == nil {
		return nil, nil
	}
	c := o.Cluster
	objs, err := parsed.Manifest(rel.Manifest)
	if err != nil {
		return nil, fmt.Errorf("release %s revision %d: recorded manifest: %w", rel.Name, rel.Version, err)
	}
	out := objs[:0]
	for _, obj := range objs {
		err := c.Normalize(obj, rel.Namespace)
		if cluster.IsUnknownKind(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// documents is what the operation parsed of manifests, and parses what it has not yet.
func (o *operation) documents() *resource.Parsed {
	if o.parsed == nil {
		o.parsed = &resource.Parsed{}
	}
	return o.parsed
}

// deployedOf returns the newest deployed revision of release last.Name: last itself when it is
// deployed, which spares reading and decoding its record again.
func deployedOf(ctx context.Context, store release.Reader, last *release.Release) (*release.Release, error) {
	if last.Info.Status == release.StatusDeployed {
		return last, nil
	}
	return store.Deployed(ctx, last.Name)
}
