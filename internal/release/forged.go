package release

import (
	"fmt"
	"strconv"
)

// MismatchError is a record object whose record is not the one its labels name: another
// release's, or another revision's, or another namespace's. A tenant may write any Secret of
// its namespace, so a record is read as the release's only when it agrees with the object
// that holds it.
type MismatchError struct {
	// Object names the record object: Kind/namespace/name.
	Object string
	// Field is what disagrees: "name", "version" or "namespace"; Label is what the object says,
	// Record what the record says.
	Field, Label, Record string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s: the record's %s is %q, its object says %q: it was not read: no record berth or Helm writes disagrees with its object; delete the object if nobody of the release wrote it",
		e.Object, e.Field, e.Record, e.Label)
}

// matches returns a *MismatchError unless rel, decoded from the record object it (named
// object), is the record its labels (name, version) and namespace say it is.
func matches(object string, rel *Release, it *item) error {
	mismatch := func(field, label, record string) error {
		return &MismatchError{Object: object, Field: field, Label: label, Record: record}
	}
	if name := it.labels["name"]; name != "" && rel.Name != name {
		return mismatch("name", name, rel.Name)
	}
	if it.version > 0 && rel.Version != it.version {
		return mismatch("version", strconv.Itoa(it.version), strconv.Itoa(rel.Version))
	}
	if it.namespace != "" && rel.Namespace != "" && rel.Namespace != it.namespace {
		return mismatch("namespace", it.namespace, rel.Namespace)
	}
	return nil
}

// objectName names the record object it: Kind/namespace/name.
func (s *HelmStore) objectName(it *item) string {
	return fmt.Sprintf("%s/%s/%s", s.kind, it.namespace, it.name)
}
