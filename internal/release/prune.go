package release

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"helm.sh/helm/v4/pkg/storage/driver"
)

// Prune deletes the oldest revisions of a release until at most max remain, never the deployed
// one, and returns the versions it deleted, as Helm's storage does for --history-max: Helm
// calls it with max = history-max - 1 before it records a new revision. A negative max keeps
// everything; a release with no revisions has nothing to prune. It deletes as many revisions as
// it can and joins the errors of those it could not delete.
func (s *HelmStore) Prune(ctx context.Context, name string, max int) ([]int, error) {
	if max < 0 {
		return nil, nil
	}
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
