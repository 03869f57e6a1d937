package release

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"helm.sh/helm/v4/pkg/storage/driver"
)

// errPartsMissing is the cause of an IncompleteRecordError whose parts are not all there.
var errPartsMissing = errors.New("parts missing")

// IncompleteRecordError is a record whose parts are missing, or not those it names: the record of
// an operation that stopped while writing them, or parts deleted by hand. It is never read as a
// release.
type IncompleteRecordError struct {
	Namespace, Name string
	Version         int
	// Status is the status the record object says: the pending status of the operation that
	// was writing it.
	Status Status
	Err    error
}

func (e *IncompleteRecordError) Error() string {
	return fmt.Sprintf("release %s/%s revision %d: the record is incomplete (%v): it was not written to its end, or its parts (%s) were deleted",
		e.Namespace, e.Name, e.Version, e.Err, PartSecretType)
}

func (e *IncompleteRecordError) Unwrap() error { return e.Err }

// loaded is a record object decoded, with what moved to its parts put back.
type loaded struct {
	rel *Release
	it  *item
}

// reader reads the records of one release, fetching the parts of its records at most once.
type reader struct {
	s     *HelmStore
	objs  recordObjects
	name  string
	parts map[string]item // by name; nil until read
	// every is set when every record of the release is read: one list then reads the parts of
	// them all, where reading one record lists its own parts alone. listed is set once it has.
	every, listed bool
}

// recordsSelector selects what a list of the records of release name reads: its record objects,
// as Helm's driver labels them (owner=helm, name=NAME), and its journal (owner=berth, name=NAME),
// which a list kept while the store remembers answers the reads of (see Journals.Beside); not the
// parts of its records (owner=berth too, and large), nor objects of others labelled with its name.
func recordsSelector(name string) string {
	return "owner in (berth,helm),name=" + name + ",!" + PartSetLabel
}

// isRecord reports whether it, of a list by recordsSelector, is a record object.
func (it *item) isRecord() bool { return it.labels["owner"] == "helm" }

func (s *HelmStore) reader(name string) *reader {
	return &reader{s: s, objs: s.records(s.namespace), name: name}
}

// load decodes the record object it, with its parts put back.
func (r *reader) load(ctx context.Context, it *item) (*Release, error) {
	object := r.s.objectName(it)
	rel, err := decode(ctx, r.s.expansion, object, it.data)
	if err == nil {
		err = matches(object, rel, it)
	}
	if named := (*ExpansionError)(nil); errors.As(err, &named) || errors.As(err, new(*MismatchError)) {
		return nil, err // each names the object
	}
	if err != nil {
		return nil, fmt.Errorf("%s: decode record: %w", object, err)
	}
	count, sum, ok, err := recordParts(it)
	if !ok {
		return rel, nil
	}
	if err == nil {
		var parts [][]byte
		if parts, err = r.partsOf(ctx, it.name, it.version, count, sum); err == nil {
			err = join(ctx, r.s.expansion, object, rel, parts, sum)
		}
	}
	if expanded := new(ExpansionError); errors.As(err, &expanded) {
		return nil, err // named, never skipped as an incomplete record
	}
	if err != nil {
		incomplete := &IncompleteRecordError{Namespace: r.s.namespace, Name: r.name, Version: it.version, Err: err}
		if rel.Info != nil {
			incomplete.Status = rel.Info.Status
		}
		return nil, incomplete
	}
	r.s.seen.set(r.s.namespace+"/"+it.name, written{uid: it.uid, parts: it.annotations[PartsAnnotation]})
	return rel, nil
}

// partsOf are the count parts with sha256 sum of the record object key of revision version, in
// order.
func (r *reader) partsOf(ctx context.Context, key string, version, count int, sum string) ([][]byte, error) {
	if r.parts == nil {
		r.parts = map[string]item{}
	}
	if _, ok := r.parts[partName(key, sum, 0)]; !ok && !r.listed {
		// One record's parts alone, unless every record of the release is read.
		sel := partSetSelector(r.name, version, sum)
		if r.every {
			sel = partsSelector(r.name)
		}
		list, err := r.objs.list(ctx, sel)
		if err != nil {
			return nil, fmt.Errorf("list parts: %w", err)
		}
		for _, p := range list {
			r.parts[p.name] = p
		}
		r.listed = r.every
	}
	out := make([][]byte, count)
	for i := range count {
		p, ok := r.parts[partName(key, sum, i)]
		if !ok {
			return nil, fmt.Errorf("%w: part %d of %d", errPartsMissing, i+1, count)
		}
		out[i] = p.data
	}
	return out, nil
}

// records lists the objects that hold the records of the release, as Helm's driver labels them
// (owner=helm, name=NAME), and more labels, newest first; those with no version label (not
// written by a Helm driver) last.
func (r *reader) records(ctx context.Context, more string) ([]item, error) {
	sel := recordsSelector(r.name) + more
	list, err := r.objs.list(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: list records: %w", r.s.namespace, r.name, err)
	}
	list = slices.DeleteFunc(list, func(it item) bool { return !it.isRecord() })
	slices.SortFunc(list, func(a, b item) int { return cmp.Compare(b.version, a.version) })
	return list, nil
}

// all decodes every record in list that is complete, as Helm's driver reads a release's records:
// one that cannot be decoded is left out, as is one whose parts are missing.
func (r *reader) all(ctx context.Context, list []item) []loaded {
	r.every = true
	var out []loaded
	for i := range list {
		rel, err := r.load(ctx, &list[i])
		if err != nil {
			continue
		}
		rel.Labels = list[i].labels
		out = append(out, loaded{rel: rel, it: &list[i]})
	}
	return out
}

// newest is the newest complete record in list; nil when none is.
func (r *reader) newest(ctx context.Context, list []item) (*Release, error) {
	if len(list) > 0 && list[len(list)-1].version <= 0 {
		// A record without Helm's version label: its revision is known once decoded.
		all := r.all(ctx, list)
		if len(all) == 0 {
			return nil, nil
		}
		return slices.MaxFunc(all, func(a, b loaded) int { return cmp.Compare(a.rel.Version, b.rel.Version) }).rel, nil
	}
	for i := range list {
		rel, err := r.load(ctx, &list[i])
		var incomplete *IncompleteRecordError
		if errors.As(err, &incomplete) {
			continue // never read as a release
		}
		if err != nil {
			return nil, err
		}
		// As Helm's driver lists records: with every label of the object that holds it,
		// Helm's own (owner, status, version, ...) included, which helm get metadata prints.
		rel.Labels = list[i].labels
		return rel, nil
	}
	return nil, nil
}

// systemLabels are the labels Helm's driver keeps for itself, which its Get leaves out of a
// release's labels.
var systemLabels = driver.GetSystemLabels()

func withoutSystemLabels(l map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		if !slices.Contains(systemLabels, k) {
			out[k] = v
		}
	}
	return out
}
