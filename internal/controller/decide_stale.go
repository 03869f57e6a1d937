package controller

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// StaleError says a reconcile decided what to do from a Release or a release record that changed
// before its operation held the release's lease: another writer (a second controller, berth's
// CLI) acted in between. The operation wrote nothing; the Release is looked at again.
type StaleError struct {
	Release string
	// What changed.
	What string
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("Release %s: %s since the reconcile decided what to do; nothing was done", e.Release, e.What)
}

// ReleasedError says the release already is at what the reconcile set out to release: its last
// revision is deployed with the spec's chart version and values (another writer recorded it, or
// the Release's status lost track of it). Releasing it again would record a second revision of
// one change; the status says it instead.
type ReleasedError struct {
	Release  string
	Revision int
}

func (e *ReleasedError) Error() string {
	return fmt.Sprintf("release %s revision %d is already deployed with the chart version and values asked for", e.Release, e.Revision)
}

// uncached is the reader of what must be current.
func (r *Reconciler) uncached() client.Reader {
	if r.Uncached == nil {
		return r.Client
	}
	return r.Uncached
}

// stillHolds returns the precondition of the operation that rel's reconcile decided on, having
// seen revision seen (0: none) as release name's last record and rel at its generation, to
// release chartVersion with values: once the lease is held, both are read again, past the cache,
// and a change is a *StaleError; a release that already is what is asked (lifecycle's
// State.Holds) is a *ReleasedError. Without it two controllers (or a controller and the CLI)
// that decided from the same state would each record a revision of the same change, or one
// would undo the other's newer one.
//
// It decides nothing of the release: it is a guard against acting on a decision that
// lifecycle.Next made from a cache or a state now outdated. What the operation does with a
// current state is lifecycle's (Upgrade decides again, with Next, under the lease); the guard
// only stops an operation whose decision was made from what changed since.
func (r *Reconciler) stillHolds(rel *v1alpha1.Release, name string, seen int, chartVersion string, values map[string]any) func(context.Context, release.Reader) error {
	key := client.ObjectKeyFromObject(rel)
	generation := rel.Generation
	return func(ctx context.Context, store release.Reader) error {
		last, err := store.Last(ctx, name)
		now := 0
		switch {
		case errors.Is(err, release.ErrNotFound):
			last = nil
		case err != nil:
			return err
		default:
			now = last.Version
		}
		if now != seen {
			return &StaleError{Release: key.String(), What: fmt.Sprintf("the last revision of release %s went from %d to %d", name, seen, now)}
		}
		var cur v1alpha1.Release
		err = r.uncached().Get(ctx, key, &cur)
		switch {
		case apierrors.IsNotFound(err):
			return &StaleError{Release: key.String(), What: "it was deleted"}
		case err != nil:
			return fmt.Errorf("read Release %s: %w", key, err)
		case cur.Generation != generation || !cur.DeletionTimestamp.IsZero():
			return &StaleError{Release: key.String(), What: fmt.Sprintf("its spec changed (generation %d to %d)", generation, cur.Generation)}
		}
		if lifecycle.StateOf(last).Holds(lifecycle.Wanted{ChartVersion: chartVersion, Values: values}) {
			return &ReleasedError{Release: name, Revision: last.Version}
		}
		return nil
	}
}
