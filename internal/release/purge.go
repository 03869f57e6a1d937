package release

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berthdev/berth/internal/par"
)

// Purge deletes every revision of a release, and the parts of its records, and returns the
// versions it deleted, oldest first. Unlike Delete of each revision, it decodes no record: one
// list of the objects Helm's driver labels as the release's (owner=helm, name=NAME), then every
// one deleted at once, each only if it is still the object listed. A release with no revisions
// has nothing to purge. It deletes as many as it can and joins the errors of those it could not
// delete.
func (s *HelmStore) Purge(ctx context.Context, name string) ([]int, error) {
	objs := s.records(s.namespace)
	records, err := s.reader(name).records(ctx, "")
	if err != nil {
		return nil, err
	}
	errs := par.Each(ctx, indices(len(records)), purgeConcurrency, func(ctx context.Context, i int) error {
		if err := s.deleteRecord(ctx, objs, &records[i]); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
	for i, err := range errs {
		if err != nil {
			errs[i] = fmt.Errorf("release %s/%s: delete revision %d: %w", s.namespace, name, records[i].version, err)
		}
	}
	var deleted []int
	for i, r := range records {
		if errs[i] == nil {
			deleted = append(deleted, r.version)
		}
	}
	slices.Sort(deleted)
	return deleted, errors.Join(errs...)
}

// purgeConcurrency bounds the revisions Purge deletes at once: a release may keep hundreds.
const purgeConcurrency = 16

// indices is 0 to n-1.
func indices(n int) []int {
	is := make([]int, n)
	for i := range is {
		is[i] = i
	}
	return is
}
