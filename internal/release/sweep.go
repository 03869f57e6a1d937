package release

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SweepParts deletes the parts of revision version of release name that its record object does
// not name, and returns their names. An update of a record whose parts change writes the new
// parts, then the object, then deletes the old parts: one stopped midway leaves the new parts
// (before the object) or the old ones (after it) beside the record. No read takes them for the
// record's, and they go with the record object, which owns them; this deletes them sooner. The
// parts of a record object that names none are kept, and those of a revision with no record
// object deleted. It lists that revision's parts once, and reads its record
// object once when there are any.
func (s *HelmStore) SweepParts(ctx context.Context, name string, version int) ([]string, error) {
	objs := s.records(s.namespace)
	list, err := objs.list(ctx, partsSelector(name)+",version="+strconv.Itoa(version))
	if err != nil || len(list) == 0 {
		return nil, err
	}
	key := Key(name, version)
	named := map[string]bool{}
	rec, err := objs.get(ctx, key)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, err
	default:
		count, sum, ok, err := recordParts(rec)
		if !ok || err != nil {
			return nil, nil // a record that names no parts, or not readably: its parts are left as they are
		}
		for i := range count {
			named[partName(key, sum, i)] = true
		}
	}
	var deleted []string
	for _, p := range list {
		if named[p.name] {
			continue
		}
		uid := p.uid
		err := objs.delete(ctx, p.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("%s/%s/%s: delete a part no record names: %w", objs.kind, s.namespace, p.name, err)
		}
		deleted = append(deleted, p.name)
	}
	return deleted, nil
}
