package release

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"helm.sh/helm/v4/pkg/storage/driver"
)

// recordLabels are the labels of the object that holds rel, as Helm's drivers write them: the
// release's own labels, the time of the write (createdAt on create, modifiedAt on update), and
// Helm's name, owner, status and version, which no label of the release overrides.
func recordLabels(rel *Release, update bool) map[string]string {
	l := maps.Clone(rel.Labels)
	if l == nil {
		l = map[string]string{}
	}
	stamp := "createdAt"
	if update {
		stamp = "modifiedAt"
	}
	l[stamp] = strconv.FormatInt(time.Now().Unix(), 10)
	return withHelmLabels(l, rel.Name, rel.Version, rel.Info.Status)
}

// withHelmLabels sets on l the labels Helm's drivers keep for themselves on the object of revision
// version of release name, and returns l.
func withHelmLabels(l map[string]string, name string, version int, status Status) map[string]string {
	l["name"] = name
	l["owner"] = "helm"
	l["status"] = string(status)
	l["version"] = strconv.Itoa(version)
	return l
}

// partLabels are the labels of the parts of revision version of release name whose sha256 is
// sum: not Helm's owner, so that Helm's driver never lists them as records.
func partLabels(name string, version int, sum string) map[string]string {
	return map[string]string{"owner": "berth", "name": name, "version": strconv.Itoa(version), PartSetLabel: sum[:16]}
}

// partsSelector selects the parts of every record of release name.
func partsSelector(name string) string {
	return "owner=berth,name=" + name + "," + PartSetLabel
}

// partSetSelector selects the parts of revision version of release name whose sha256 is sum: one
// record's (two revisions of the same contents have the same sum). A version of 0 or less, from a
// record object without Helm's version label, selects by the sum alone.
func partSetSelector(name string, version int, sum string) string {
	sel := partsSelector(name) + "=" + sum[:16]
	if version > 0 {
		sel += ",version=" + strconv.Itoa(version)
	}
	return sel
}

// written is what the store last wrote or read of a record object that has parts: its UID and
// its PartsAnnotation.
type written struct {
	uid   types.UID
	parts string
}

// partsSeen remembers, for each record object with parts that the store wrote or read, the
// parts it has, so that rewriting the record (a new status) writes its parts again only when
// they change.
type partsSeen struct {
	mu sync.Mutex
	m  map[string]written // by namespace/name
}

func (p *partsSeen) get(key string) (written, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.m[key]
	return w, ok
}

func (p *partsSeen) set(key string, w written) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.parts == "" {
		delete(p.m, key)
		return
	}
	if p.m == nil {
		p.m = map[string]written{}
	}
	p.m[key] = w
}

// write creates (update false) or replaces the record of rel, and its parts when it has some.
// A new record's object is written first and its parts after, owned by it: until the last is
// written the record is incomplete, and no read takes it for a release. A replaced record's new
// parts are written before it, and the old ones deleted after it.
func (s *HelmStore) write(ctx context.Context, rel *Release, update bool) error {
	e, err := s.encoder.encode(rel)
	if err != nil {
		return err
	}
	objs := s.records(s.namespace)
	key := Key(rel.Name, rel.Version)
	o := newItem{name: key, labels: recordLabels(rel, update), data: e.data}
	delete(o.labels, PartsLabel) // read with the release it was written for, or copied by helm
	if a := e.partsAnnotation(); a != "" {
		o.annotations = map[string]string{PartsAnnotation: a}
		o.labels[PartsLabel] = e.partsLabel(rel.Version)
	}
	memo := s.namespace + "/" + key
	if !update {
		out, err := objs.put(ctx, o, false)
		if apierrors.IsAlreadyExists(err) {
			out, err = s.replaceIncomplete(ctx, objs, o)
		}
		if err != nil {
			return created(err)
		}
		if err := s.writeParts(ctx, objs, rel, e, out.uid); err != nil {
			return err
		}
		s.seen.set(memo, written{uid: out.uid, parts: e.partsAnnotation()})
		return nil
	}
	before, known := s.seen.get(memo)
	if !known && len(e.parts) > 0 {
		cur, err := objs.get(ctx, key)
		if err != nil {
			return err
		}
		before = written{uid: cur.uid, parts: cur.annotations[PartsAnnotation]}
	}
	if len(e.parts) > 0 && before.parts != e.partsAnnotation() {
		if err := s.writeParts(ctx, objs, rel, e, before.uid); err != nil {
			return err
		}
	}
	out, err := objs.put(ctx, o, true)
	if err != nil {
		return err
	}
	s.seen.set(memo, written{uid: out.uid, parts: e.partsAnnotation()})
	if before.parts != "" && before.parts != e.partsAnnotation() {
		s.deleteParts(ctx, objs, key, before.parts)
	}
	return nil
}

// writeParts creates the parts of e, the record of rel, owned by the record object with uid. A
// part that exists already is kept if it is that object's (the same name holds the same
// contents), and replaced if it is left from another object of the same name.
func (s *HelmStore) writeParts(ctx context.Context, objs recordObjects, rel *Release, e *encoding, owner types.UID) error {
	key := Key(rel.Name, rel.Version)
	for i, p := range e.parts {
		o := newItem{name: partName(key, e.sum, i), labels: partLabels(rel.Name, rel.Version, e.sum), data: p,
			part: true, owner: owner, ownerName: key}
		_, err := objs.put(ctx, o, false)
		if apierrors.IsAlreadyExists(err) {
			var cur *item
			if cur, err = objs.get(ctx, o.name); err == nil && !cur.ownedBy(owner) {
				uid := cur.uid
				err = objs.delete(ctx, o.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
				if err == nil {
					_, err = objs.put(ctx, o, false)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("%s/%s/%s: write part %d of %d of the record: %w", objs.kind, s.namespace, o.name, i+1, len(e.parts), err)
		}
	}
	return nil
}

// replaceIncomplete creates the record object o in place of an object of the same name whose
// parts are missing: the record of an operation that stopped while writing them, which no read
// took for a release. Any other record that exists is Helm's ErrReleaseExists.
func (s *HelmStore) replaceIncomplete(ctx context.Context, objs recordObjects, o newItem) (*item, error) {
	cur, err := objs.get(ctx, o.name)
	if err != nil {
		return nil, err
	}
	count, sum, ok, err := recordParts(cur)
	if !ok || err != nil {
		return nil, driver.ErrReleaseExists
	}
	r := &reader{s: s, objs: objs, name: cur.labels["name"]}
	if _, err := r.partsOf(ctx, cur.name, cur.version, count, sum); !errors.Is(err, errPartsMissing) {
		return nil, driver.ErrReleaseExists
	}
	uid := cur.uid
	if err := objs.delete(ctx, o.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	deletePartsOf(ctx, objs, o.name, count, sum)
	return objs.put(ctx, o, false)
}

// deleteParts deletes the parts that annotation ann names of the record object key. A part it
// cannot delete is owned by the record object, and goes with it.
func (s *HelmStore) deleteParts(ctx context.Context, objs recordObjects, key, ann string) {
	count, sum, err := partsOf(ann)
	if err != nil {
		return
	}
	deletePartsOf(ctx, objs, key, count, sum)
}

// deletePartsOf deletes the count parts with sha256 sum (or its start) of the record object key.
func deletePartsOf(ctx context.Context, objs recordObjects, key string, count int, sum string) {
	for i := range count {
		_ = objs.delete(ctx, partName(key, sum, i), metav1.DeleteOptions{})
	}
}

// created is err of a write, with an object that exists already as Helm's drivers say it.
func created(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return driver.ErrReleaseExists
	}
	return err
}
