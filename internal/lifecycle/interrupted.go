package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
)

// Interrupted is an operation on a release that stopped before it ended: its process was killed,
// it stopped on a signal, or Helm left the release pending.
type Interrupted struct {
	Release   string
	Operation release.Operation
	// Last is the release's newest revision; nil when none is recorded.
	Last *release.Release
	// Deployed is the newest deployed revision's number; 0 when there is none.
	Deployed int
	// Journal is the operation's journal; nil when it has none (Helm left the release pending).
	Journal *release.Journal
	// Stale says the journal outlived its operation, which recorded its outcome: recovering only
	// deletes it.
	Stale bool
	// Incomplete is the revision whose record the operation was writing when it stopped, its
	// first step, before anything else changed: the record's object exists, not all its parts
	// (see release.IncompleteRecordError), so it is no revision, and what moved to its parts is
	// lost. Recovering, by finishing or undoing alike, deletes it and its parts, and a journal
	// left by an earlier operation; Last is then the newest revision still. 0 when there is none.
	Incomplete int
}

// JournalReader reads journals.
type JournalReader interface {
	Get(ctx context.Context, name string) (*release.Journal, error)
}

// Inspection is what is under way on a release, or was left unfinished.
type Inspection struct {
	// Holder holds the release's lease; Live says it still does.
	Holder *release.Holder
	Live   bool
	// Interrupted is the operation left unfinished; nil when there is none or when it is still
	// under way (Live).
	Interrupted *Interrupted
	// Running is the journal of the operation under way (Live): its plan and how far it got
	// (WindowOf says what its watch window watches, and since when); nil when it keeps none.
	Running *release.Journal
}

// Inspect reads whether an operation on release name is under way or was interrupted, without
// changing anything. journals and leases may be nil.
func Inspect(ctx context.Context, store release.Reader, journals JournalReader, leases Leases, name string) (*Inspection, error) {
	out := &Inspection{}
	if leases != nil {
		h, live, err := leases.Holder(ctx, name)
		if err != nil {
			return nil, err
		}
		out.Holder, out.Live = h, live
	}
	if out.Live {
		if journals != nil {
			j, err := journals.Get(ctx, name)
			if err != nil {
				return nil, err
			}
			out.Running = j
		}
		return out, nil
	}
	in, err := findInterrupted(ctx, store, journals, name)
	out.Interrupted = in
	return out, err
}

// pending reports whether a status is one an operation leaves while it runs.
func pending(s release.Status) bool {
	switch s {
	case release.StatusPendingInstall, release.StatusPendingUpgrade, release.StatusPendingRollback, release.StatusUninstalling:
		return true
	}
	return false
}

// operationOf is the operation a pending status belongs to.
func operationOf(s release.Status) release.Operation {
	switch s {
	case release.StatusPendingInstall:
		return release.OpInstall
	case release.StatusPendingUpgrade:
		return release.OpUpgrade
	case release.StatusPendingRollback:
		return release.OpRollback
	}
	return release.OpUninstall
}

// findInterrupted reads the release's newest revision and journal and says which operation was
// left unfinished, if any. Whoever calls it holds the release's lease, or only reads. The
// records are listed first: under the lease, that list holds the journal too (see
// release.Journals.Beside), which is then read without a request of its own.
func findInterrupted(ctx context.Context, store release.Reader, journals JournalReader, name string) (*Interrupted, error) {
	last, err := store.Last(ctx, name)
	if errors.Is(err, release.ErrNotFound) {
		last, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	var j *release.Journal
	if journals != nil {
		if j, err = journals.Get(ctx, name); err != nil {
			return nil, err
		}
	}
	incomplete, err := incompleteAfter(ctx, store, name, last)
	if err != nil {
		return nil, err
	}
	isPending := last != nil && pending(last.Info.Status)
	if j == nil && !isPending && incomplete == nil {
		return nil, nil
	}
	in := &Interrupted{Release: name, Last: last, Journal: j}
	if dep, err := store.Deployed(ctx, name); err == nil {
		in.Deployed = dep.Version
	}
	if j != nil {
		in.Operation = j.Operation
		if j.Operation == release.OpUninstall {
			in.Stale = last == nil || last.Version != j.Revision || last.Info.Status == release.StatusUninstalled
		} else {
			in.Stale = last == nil || last.Version != j.Revision || !isPending
		}
	}
	if isPending && (j == nil || in.Stale) {
		// Recovered from the record alone (Helm left it pending, or the journal is another's).
		in.Operation, in.Stale = operationOf(last.Info.Status), false
		in.Journal = nil
	}
	if incomplete != nil && !isPending && (in.Journal == nil || in.Stale) {
		// Stopped while recording its revision: the journal, written once that is done, is
		// none, or another operation's.
		in.Operation, in.Journal, in.Stale, in.Incomplete = operationOf(incomplete.Status), nil, false, incomplete.Version
	}
	if in.Deployed == 0 && in.Journal != nil && !in.Stale {
		in.Deployed = supersededInLastStep(ctx, store, in.Journal)
	}
	return in, nil
}

// incompleteAfter is the record of the revision after last (the first when last is nil) when
// it is incomplete: an operation was killed while it wrote that record's parts. Every read
// skips it; nil when there is none.
func incompleteAfter(ctx context.Context, store release.Reader, name string, last *release.Release) (*release.IncompleteRecordError, error) {
	next := 1
	if last != nil {
		next = last.Version + 1
	}
	_, err := store.Get(ctx, name, next)
	var incomplete *release.IncompleteRecordError
	switch {
	case errors.As(err, &incomplete):
		return incomplete, nil
	case err == nil || errors.Is(err, release.ErrNotFound):
		return nil, nil
	}
	return nil, err
}

// supersededInLastStep is the revision that was deployed when an install, upgrade or rollback
// began and that its last step, which records the new revision deployed, has already marked
// superseded: that step writes the superseded revisions first, so a kill within it leaves no
// revision deployed. That revision is still the one to roll back to. It is 0 when the journal's
// plan has no such step or none of the revisions it supersedes is recorded superseded.
func supersededInLastStep(ctx context.Context, store release.Reader, j *release.Journal) int {
	if j.Plan == nil || len(j.Plan.Steps) == 0 {
		return 0
	}
	last := j.Plan.Steps[len(j.Plan.Steps)-1]
	if last.Action != plan.Record || last.Status != string(release.StatusDeployed) || last.Revision != j.Revision {
		return 0
	}
	newest := 0
	for _, v := range last.Supersedes {
		rel, err := store.Get(ctx, j.Release, v)
		if err == nil && rel.Info.Status == release.StatusSuperseded && v > newest {
			newest = v
		}
	}
	return newest
}

// Describe says what was interrupted, for people.
func (in *Interrupted) Describe() string {
	if in.Stale {
		return fmt.Sprintf("%s journal left after the %s ended", in.Operation, in.Operation)
	}
	if in.Incomplete > 0 {
		return fmt.Sprintf("%s of revision %d stopped while recording it (its record is incomplete: not a revision)", in.Operation, in.Incomplete)
	}
	s := string(in.Operation)
	if in.Last != nil {
		s += fmt.Sprintf(" of revision %d (%s", in.Last.Version, in.Last.Info.Status)
		if j := in.Journal; j != nil && j.Plan != nil {
			s += fmt.Sprintf(", %d of %d steps done", len(j.Steps), len(j.Plan.Steps))
		}
		if in.Journal == nil {
			s += ", no journal"
		}
		s += ")"
	}
	if in.Journal != nil && in.Journal.State == release.JournalInterrupted {
		return s + " stopped on a signal"
	}
	return s + " did not finish"
}

// Next says what recovering does: by default, or with rollback.
func (in *Interrupted) Next(rollback bool) string {
	switch {
	case in.Stale:
		return "delete the journal"
	case in.Incomplete > 0 && in.Last != nil:
		return fmt.Sprintf("delete the incomplete record of revision %d; nothing else had changed: the release stays at revision %d", in.Incomplete, in.Last.Version)
	case in.Incomplete > 0:
		return fmt.Sprintf("delete the incomplete record of revision %d; nothing else had changed", in.Incomplete)
	case in.Operation == release.OpUninstall:
		if rollback && (in.Last == nil || in.Last.Info.Status != release.StatusUninstalling) {
			return fmt.Sprintf("abandon the uninstall before anything was deleted: remove the pre-delete hooks it left; the release stays at revision %d", in.Last.Version)
		}
		if rollback {
			return "finish uninstalling (an uninstall cannot be rolled back once objects are deleted)"
		}
		return "finish uninstalling"
	case !rollback:
		return fmt.Sprintf("finish the %s of revision %d", in.Operation, in.Last.Version)
	case in.Operation == release.OpInstall:
		return "uninstall the partly installed release"
	case in.Deployed > 0:
		return fmt.Sprintf("roll back to revision %d, the deployed one", in.Deployed)
	default:
		return "nothing: there is no deployed revision to roll back to"
	}
}

// latest is the release's newest revision after recovery; nil when none is recorded.
func (in *Interrupted) latest(ctx context.Context, d Deps) *release.Release {
	if in == nil {
		return nil
	}
	last, err := d.Store.Last(ctx, in.Release)
	if err != nil {
		return nil
	}
	return last
}
