package lifecycle

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// Leases take a release's lease.
type Leases interface {
	// Acquire takes the lease, or says who holds it (a *release.HeldError); it may watch a held
	// lease, within ctx, to tell whether its holder is live (release.Leases.Acquire).
	Acquire(ctx context.Context, name string, me release.Holder) (*release.Lease, error)
	// Holder reads who holds the lease and whether it looks live; nil when nobody does.
	Holder(ctx context.Context, name string) (*release.Holder, bool, error)
}

// JournalStore keeps the journal of each release's operation under way. Writes are conditional
// on the version of the journal the writer last read or wrote ("" for none): a journal at another
// version is another operation's, and the write is refused (a *release.JournalChangedError).
type JournalStore interface {
	// Read returns the journal of a release and its version; nil and "" when there is none.
	Read(ctx context.Context, name string) (*release.Journal, string, error)
	// Put writes j over the journal at version and returns the version written.
	Put(ctx context.Context, j *release.Journal, version string) (string, error)
	// Delete deletes the journal at version.
	Delete(ctx context.Context, name, version string) error
	// Object is the object that holds the journal of release name, without the journal, which
	// the preflight matches webhooks against; nil for journals kept outside the cluster.
	Object(name string) *unstructured.Unstructured
}

// interruptible cuts the cluster's waits short when stop ends (a signal): a wait changes nothing,
// so stopping it is safe; changes (apply, delete) run to their answer.
type interruptible struct {
	Cluster
	stop context.Context
}

func (c interruptible) with(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(c.stop, func() { cancel(ErrInterrupted) })
	return ctx, func() { unhook(); cancel(nil) }
}

func (c interruptible) WaitReady(ctx context.Context, ids []resource.Identity, opts readiness.Options, progress cluster.Progress) error {
	ctx, cancel := c.with(ctx)
	defer cancel()
	return c.Cluster.WaitReady(ctx, ids, opts, progress)
}

func (c interruptible) WaitAbsent(ctx context.Context, targets map[resource.Identity]types.UID, progress cluster.Progress) error {
	ctx, cancel := c.with(ctx)
	defer cancel()
	return c.Cluster.WaitAbsent(ctx, targets, progress)
}

func (c interruptible) RunHook(ctx context.Context, obj *unstructured.Unstructured, opts cluster.HookOptions) (cluster.HookRun, error) {
	ctx, cancel := c.with(ctx)
	defer cancel()
	return c.Cluster.RunHook(ctx, obj, opts)
}

func (c interruptible) WatchWindow(ctx context.Context, targets []resource.Identity, opts cluster.WindowOptions, progress cluster.Progress) error {
	ctx, cancel := c.with(ctx)
	defer cancel()
	return c.Cluster.WatchWindow(ctx, targets, opts, progress)
}

// LeftBehind reports whether an operation on release name left its lease or its journal behind:
// a process killed at its very end, after the last record was removed; or the incomplete record
// of its first revision: an install killed while it wrote that record. Uninstall takes them over
// and removes them, even when no record is left.
func LeftBehind(ctx context.Context, d Deps, name string) (bool, error) {
	if d.Store != nil {
		incomplete, err := incompleteAfter(ctx, d.Store, name, nil)
		if err != nil || incomplete != nil {
			return incomplete != nil, err
		}
	}
	if d.Journals != nil {
		j, _, err := d.Journals.Read(ctx, name)
		if err != nil || j != nil {
			return j != nil, err
		}
	}
	if d.Leases != nil {
		h, _, err := d.Leases.Holder(ctx, name)
		return h != nil, err
	}
	return false, nil
}
