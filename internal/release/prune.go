package release

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"helm.sh/helm/v4/pkg/storage/driver"
)

// Prune deletes the oldest revisions of a release until at most keep remain, never the deployed
// one, and returns the versions it deleted, as Helm's storage does for --history-max: Helm
// calls it with keep = history-max - 1 before it records a new revision. A negative keep keeps
// everything; a release with no revisions has nothing to prune. It deletes as many revisions as
// it can and joins the errors of those it could not delete. It decodes no record.
func (s *HelmStore) Prune(ctx context.Context, name string, keep int) ([]int, error) {
	if keep < 0 {
		return nil, nil
	}
	objs := s.records(s.namespace)
	records, err := s.reader(name).records(ctx, "")
	if err != nil {
		return nil, err
	}
	if len(records) <= keep {
		return nil, nil
	}
	// By the labels Helm's driver writes on each record, as its Deployed finds the deployed one:
	// a record's contents are mostly its chart and manifest, gzipped, and there may be many.
	deployed := 0
	for _, r := range records {
		if r.version <= 0 {
			return s.pruneDecoded(ctx, name, keep) // a record without Helm's version label
		}
		if r.labels["status"] == string(StatusDeployed) {
			deployed = max(deployed, r.version)
		}
	}
	slices.Reverse(records) // oldest first
	var doomed []item
	for _, r := range records {
		if len(records)-len(doomed) == keep {
			break
		}
		if r.version != deployed {
			doomed = append(doomed, r)
		}
	}
	var deleted []int
	var errs []error
	for i, r := range doomed {
		if err := s.deleteRecord(ctx, objs, &doomed[i]); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete revision %d: %w", r.version, err))
			continue
		}
		deleted = append(deleted, r.version)
	}
	if err := errors.Join(errs...); err != nil {
		return deleted, fmt.Errorf("release %s/%s: prune history to %d revisions: %w", s.namespace, name, keep, err)
	}
	return deleted, nil
}

// pruneDecoded is Prune by the decoded records, for a release with a record that has no version
// label.
func (s *HelmStore) pruneDecoded(ctx context.Context, name string, max int) ([]int, error) {
	history, err := s.History(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(history) <= max {
		return nil, nil
	}
	deployed, err := s.Deployed(ctx, name)
	if err != nil && !errors.Is(err, ErrNoDeployed) {
		return nil, err
	}

	var doomed []int
	for _, r := range history {
		if len(history)-len(doomed) == max {
			break
		}
		if deployed == nil || r.Version != deployed.Version {
			doomed = append(doomed, r.Version)
		}
	}

	var deleted []int
	var errs []error
	for _, v := range doomed {
		if _, err := s.Delete(ctx, name, v); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, v)
	}
	if err := errors.Join(errs...); err != nil {
		return deleted, fmt.Errorf("release %s/%s: prune history to %d revisions: %w", s.namespace, name, max, err)
	}
	return deleted, nil
}

// isNotFound reports whether a driver error means the record does not exist.
func isNotFound(err error) bool {
	return errors.Is(err, driver.ErrReleaseNotFound) || apierrors.IsNotFound(err)
}
