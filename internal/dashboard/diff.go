package dashboard

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/diff"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/valuemask"
)

// fileDiff is the diff of one object, or of the values.
type fileDiff struct {
	Name string `json:"name"`
	// Change is created, deleted, changed or unchanged, from the first side to the second.
	Change string `json:"change"`
	Diff   string `json:"diff,omitempty"`
}

// diffView compares two revisions of a release, or a revision with the cluster.
type diffView struct {
	From  int        `json:"from"`
	To    string     `json:"to"`
	What  string     `json:"what"`
	Files []fileDiff `json:"files"`
	// Masked says Secrets and the values of encrypted values files are masked.
	Masked bool `json:"masked"`
}

// diff compares revision from of a release (namespace, name) with revision to (a number, or
// "live": the objects in the cluster, on the fields the revision sets), on its manifest
// (what=manifest) or its values (what=values).
func (s *Server) diff(r *request) (any, error) {
	ns, name, err := releaseKey(r)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	from, err := intParam(r, "from")
	if err != nil {
		return nil, err
	}
	what, to := q.Get("what"), q.Get("to")
	if what == "" {
		what = "manifest"
	}
	if what != "manifest" && what != "values" {
		return nil, &InputError{Msg: fmt.Sprintf("what %q: want manifest or values", what)}
	}
	if to == "live" && what == "values" {
		return nil, &InputError{Msg: "values are compared between revisions; the cluster has objects, not values"}
	}
	store, err := s.store(r.clients, ns)
	if err != nil {
		return nil, err
	}
	a, err := revisionOf(r.ctx, store, name, from)
	if err != nil {
		return nil, err
	}
	v := diffView{From: a.Version, To: to, What: what, Files: []fileDiff{}, Masked: !s.opts.RevealSecrets}
	opts := diff.DefaultOptions()
	opts.ShowSecrets = s.opts.RevealSecrets
	secrets := func(rels ...*release.Release) []string {
		var out []string
		for _, rel := range rels {
			out = append(out, valuemask.Strings(rel.Config, release.EncryptedValuesOf(rel))...)
		}
		return out
	}
	c := cluster.New(r.clients.Dynamic, r.clients.Mapper)
	if to == "live" {
		// Every revision's encrypted values may stand in the cluster now.
		history, err := store.History(r.ctx, name)
		if err != nil {
			return nil, err
		}
		opts.Secrets = secrets(history...)
		v.Files, err = liveDiff(r, c, a, opts)
		return v, err
	}
	var toVersion int
	if _, err := fmt.Sscan(to, &toVersion); err != nil || toVersion < 0 {
		return nil, &InputError{Msg: fmt.Sprintf("to %q: want a revision number or live", to)}
	}
	b, err := revisionOf(r.ctx, store, name, toVersion)
	if err != nil {
		return nil, err
	}
	v.To = fmt.Sprint(b.Version)
	opts.Secrets = secrets(a, b)
	if what == "values" {
		f, err := valuesDiff(a, b, s.opts.RevealSecrets)
		if err != nil {
			return nil, err
		}
		v.Files = append(v.Files, f)
		return v, nil
	}
	v.Files, err = manifestDiff(c, a, b, opts)
	return v, err
}

// objectsOf are the objects of a revision's manifest by identity, normalized, in manifest order.
func objectsOf(c *cluster.Client, rel *release.Release) ([]resource.Identity, map[resource.Identity]*unstructured.Unstructured, error) {
	objs, err := resource.ParseManifest(rel.Manifest)
	if err != nil {
		return nil, nil, fmt.Errorf("release %s/%s revision %d: read manifest: %w", rel.Namespace, rel.Name, rel.Version, err)
	}
	ids := make([]resource.Identity, 0, len(objs))
	byID := make(map[resource.Identity]*unstructured.Unstructured, len(objs))
	for _, obj := range objs {
		_ = c.Normalize(obj, rel.Namespace)
		id := resource.IdentityOf(obj)
		if _, dup := byID[id]; !dup {
			ids = append(ids, id)
		}
		byID[id] = obj
	}
	return ids, byID, nil
}

// manifestDiff compares the objects of two revisions, one diff per object.
func manifestDiff(c *cluster.Client, a, b *release.Release, opts diff.Options) ([]fileDiff, error) {
	aIDs, aObjs, err := objectsOf(c, a)
	if err != nil {
		return nil, err
	}
	bIDs, bObjs, err := objectsOf(c, b)
	if err != nil {
		return nil, err
	}
	ids := slices.Clone(aIDs)
	for _, id := range bIDs {
		if _, ok := aObjs[id]; !ok {
			ids = append(ids, id)
		}
	}
	out := make([]fileDiff, 0, len(ids))
	for _, id := range ids {
		before, after := aObjs[id], bObjs[id]
		d, err := diff.Versions(id, before, after, fmt.Sprintf("%s (revision %d)", id, a.Version), fmt.Sprintf("%s (revision %d)", id, b.Version), opts)
		if err != nil {
			return nil, err
		}
		out = append(out, fileDiff{Name: id.String(), Change: change(before != nil, after != nil, d), Diff: d})
	}
	return out, nil
}

// liveDiff compares the objects of a revision with the cluster, on the fields the revision sets:
// what the API server defaulted, and fields other managers own that the chart does not set, do
// not show.
func liveDiff(r *request, c *cluster.Client, rel *release.Release, opts diff.Options) ([]fileDiff, error) {
	ids, objs, err := objectsOf(c, rel)
	if err != nil {
		return nil, err
	}
	list := make([]*unstructured.Unstructured, 0, len(ids))
	for _, id := range ids {
		list = append(list, objs[id])
	}
	live, err := c.LiveObjects(r.ctx, list)
	if err != nil {
		return nil, err
	}
	out := make([]fileDiff, 0, len(ids))
	for _, id := range ids {
		desired := objs[id]
		var seen *unstructured.Unstructured
		if l := live[id]; l != nil {
			seen = &unstructured.Unstructured{Object: project(l.Object, desired.Object).(map[string]any)}
		}
		d, err := diff.Versions(id, desired, seen, fmt.Sprintf("%s (revision %d)", id, rel.Version), fmt.Sprintf("%s (live)", id), opts)
		if err != nil {
			return nil, err
		}
		out = append(out, fileDiff{Name: id.String(), Change: change(true, seen != nil, d), Diff: d})
	}
	return out, nil
}

// project keeps of live the fields that desired sets: of a map, the keys desired has; of a list
// as long as desired's, each item projected on desired's; anything else as it is live.
func project(live, desired any) any {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return live
		}
		out := make(map[string]any, len(d))
		for k, dv := range d {
			if lv, ok := l[k]; ok {
				out[k] = project(lv, dv)
			}
		}
		return out
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(d) {
			return live
		}
		out := make([]any, len(l))
		for i := range l {
			out[i] = project(l[i], d[i])
		}
		return out
	}
	return live
}

// valuesDiff compares the values two revisions were given, those of encrypted values files
// masked unless reveal.
func valuesDiff(a, b *release.Release, reveal bool) (fileDiff, error) {
	text := func(rel *release.Release) (string, error) {
		vals := rel.Config
		if !reveal {
			vals = valuemask.Values(vals, release.EncryptedValuesOf(rel))
		}
		if len(vals) == 0 {
			return "", nil
		}
		out, err := yaml.Marshal(vals)
		return string(out), err
	}
	at, err := text(a)
	if err != nil {
		return fileDiff{}, err
	}
	bt, err := text(b)
	if err != nil {
		return fileDiff{}, err
	}
	d, err := diff.Unified(at, bt, fmt.Sprintf("values (revision %d)", a.Version), fmt.Sprintf("values (revision %d)", b.Version), diff.DefaultOptions().Context)
	return fileDiff{Name: "values", Change: change(true, true, d), Diff: d}, err
}

func change(before, after bool, d string) string {
	switch {
	case !before && after:
		return "created"
	case before && !after:
		return "deleted"
	case d != "":
		return "changed"
	}
	return "unchanged"
}
