package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
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

// findInterrupted reads the release's journal and newest revision and says which operation was
// left unfinished, if any. Whoever calls it holds the release's lease, or only reads.
func findInterrupted(ctx context.Context, store release.Reader, journals JournalReader, name string) (*Interrupted, error) {
	var j *release.Journal
	if journals != nil {
		var err error
		if j, err = journals.Get(ctx, name); err != nil {
			return nil, err
		}
	}
	last, err := store.Last(ctx, name)
	if errors.Is(err, release.ErrNotFound) {
		last, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	isPending := last != nil && pending(last.Info.Status)
	if j == nil && !isPending {
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
	if in.Deployed == 0 && in.Journal != nil && !in.Stale {
		in.Deployed = supersededInLastStep(ctx, store, in.Journal)
	}
	return in, nil
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

// finish carries an interrupted operation to its end.
func (d *operation) finish(ctx context.Context, in *Interrupted) error {
	var jo release.JournalOptions
	if in.Journal != nil {
		jo = in.Journal.Options
	} else {
		jo.Wait = in.Operation == release.OpUninstall
	}
	d.resume, d.recovering = in.Journal, true
	switch {
	case in.Stale:
	case in.Operation == release.OpUninstall:
		o := UninstallOptions{Name: in.Release, Cascade: cascadeOf(jo.Cascade), KeepHistory: jo.KeepHistory, NoHooks: jo.NoHooks,
			WaitOptions: WaitOptions{Wait: jo.Wait, WaitForJobs: jo.WaitForJobs, OrderIfDeclared: jo.Ordered}}
		if _, err := d.uninstall(ctx, o); err != nil {
			return err
		}
	default:
		if err := d.resumeRevision(ctx, in, jo); err != nil {
			return err
		}
	}
	return d.end(ctx, true)
}

// resumeRevision finishes an interrupted install, upgrade or rollback of the newest revision from
// its record, skipping what the journal records as done.
func (d *operation) resumeRevision(ctx context.Context, in *Interrupted, jo release.JournalOptions) error {
	rel := in.Last
	objs, err := resource.ParseManifest(rel.Manifest)
	if err != nil {
		return fmt.Errorf("release %s revision %d: recorded manifest: %w", rel.Name, rel.Version, err)
	}
	crds, err := crdObjects(rel)
	if err != nil {
		return err
	}
	var previous []*release.Release
	if dep, err := d.Store.Deployed(ctx, rel.Name); err == nil && dep.Version != rel.Version {
		previous = append(previous, dep)
	}
	if rel.Version > 1 {
		if prev, err := d.Store.Get(ctx, rel.Name, rel.Version-1); err == nil {
			previous = append(previous, prev)
		}
	}
	rev := revision{rel: rel, recorded: true, previous: previous, crds: crds, objects: objs}
	pol := policy{op: in.Operation,
		settings: settings{wait: WaitOptions{Wait: jo.Wait, WaitForJobs: jo.WaitForJobs, OrderIfDeclared: jo.Ordered},
			noHooks: jo.NoHooks, takeOwnership: jo.TakeOwnership},
		said: descriptions{failure: fmt.Sprintf("Finishing the interrupted %s of %q failed", in.Operation, rel.Name)},
	}
	switch in.Operation {
	case release.OpInstall:
		pol.said.success = "Install complete"
	case release.OpUpgrade:
		pol.said.success = "Upgrade complete"
	default:
		pol.said.success = fmt.Sprintf("Rollback to %d", rel.Info.RollbackRevision)
	}
	if j := in.Journal; j != nil && j.Plan != nil && j.Operation == in.Operation && j.Revision == rel.Version {
		return d.resumeAsRecorded(ctx, rev, pol, j.Plan)
	}
	return d.carryOut(ctx, rev, pol) // no journal (Helm left the release pending): planned from the record
}

// resumeAsRecorded goes on with the journalled plan pl of the interrupted revision rev, from its
// first step not done: nothing is surveyed, validated or planned again, and the deletes go by
// the UIDs the plan recorded. Only the live objects' metadata is read, to tell what was created
// from what was configured; the rest is the revision pipeline's (runRevision).
func (d *operation) resumeAsRecorded(ctx context.Context, rev revision, pol policy, pl *plan.Plan) error {
	rel := rev.rel
	p, err := prepare(d.Cluster, rel.Name, rel.Namespace, rev.crds, rev.objects)
	if err != nil {
		return err
	}
	before, err := live(ctx, d.Cluster, p.objects)
	if err != nil {
		return err
	}
	return d.runRevision(ctx, &planned{revision: rev, policy: pol, p: p, s: survey{before: before}, plan: pl, journalled: true})
}

// abandon undoes an interrupted operation: an install is uninstalled, an upgrade or a rollback
// rolled back to the deployed revision; an uninstall that deleted nothing yet is dropped, one that
// may have is finished, as deleted objects cannot be brought back.
func (d *operation) abandon(ctx context.Context, in *Interrupted) error {
	var jo release.JournalOptions
	if in.Journal != nil {
		jo = in.Journal.Options
	}
	switch {
	case in.Stale:
	case in.Operation == release.OpUninstall:
		if in.Last != nil && in.Last.Info.Status == release.StatusUninstalling {
			return d.finish(ctx, in)
		}
		if err := d.abandonHooks(ctx, in); err != nil {
			return err
		}
	case in.Operation == release.OpInstall:
		if err := d.abandonHooks(ctx, in); err != nil {
			return err
		}
		if _, err := d.uninstall(ctx, UninstallOptions{Name: in.Release, NoHooks: jo.NoHooks,
			WaitOptions: WaitOptions{Wait: true}}); err != nil {
			return err
		}
	default:
		if in.Deployed == 0 {
			return &NoDeployedError{Release: in.Release, Operation: in.Operation}
		}
		if err := d.abandonHooks(ctx, in); err != nil {
			return err
		}
		last := in.Last
		if err := d.recordFailure(ctx, in.Operation, last,
			fmt.Sprintf("%s interrupted; rolled back to %d by berth recover --rollback", in.Operation, in.Deployed)); err != nil {
			return err
		}
		if _, err := d.rollback(ctx, RollbackOptions{Name: in.Release, Namespace: last.Namespace, Version: in.Deployed,
			NoHooks: jo.NoHooks, WaitOptions: WaitOptions{Wait: jo.Wait, WaitForJobs: jo.WaitForJobs, OrderIfDeclared: jo.Ordered}}); err != nil {
			return err
		}
	}
	return d.end(ctx, true)
}

// abandonHooks removes the hook objects left by the interrupted operation's hook events that
// did not complete, as a plan of its own (see leftoverHooksPlan). It keeps no journal: run again,
// it deletes what is still there.
func (d *operation) abandonHooks(ctx context.Context, in *Interrupted) error {
	if in.Last == nil || in.Stale {
		return nil
	}
	pl, err := leftoverHooksPlan(d.Cluster, in)
	if err != nil || len(pl.Steps) == 0 {
		return err
	}
	return d.executeOnce(ctx, in.Operation, in.Last.Version, pl, &runner{d: d, rel: in.Last})
}

// RecoverOptions describe a recovery.
type RecoverOptions struct {
	Name string
	// Rollback undoes the interrupted operation instead of finishing it.
	Rollback bool
	WaitOptions
}

// RecoverResult is what a recovery found and did.
type RecoverResult struct {
	Name string `json:"name"`
	// Interrupted is the operation found unfinished; nil when there was none.
	Interrupted *Interrupted `json:"-"`
	// Action says what recovery did.
	Action string `json:"action"`
	// Release is the newest revision afterwards; nil when none is recorded.
	Release *release.Release `json:"-"`
	// Runs are the plans the recovery executed.
	Runs []Run `json:"runs,omitempty"`
}

// Recover finishes (or, with Rollback, undoes) the operation on a release that was interrupted:
// by its journal, or from the release's record alone when Helm left it pending.
func Recover(ctx context.Context, d Deps, o RecoverOptions) (*RecoverResult, error) {
	out := &RecoverResult{Name: o.Name}
	op := d.start(o.Name, ctx)
	defer func() { out.Runs = op.runs.all() }()
	err := op.operate(ctx, o.WaitOptions, func(ctx context.Context, d *operation) error {
		s, err := d.readState(ctx, o.Name)
		if err != nil {
			return err
		}
		out.Interrupted = s.Interrupted
		if s.Interrupted == nil {
			if s.Last == nil {
				_, err := d.Store.Last(ctx, o.Name) // says the release is not found
				return err
			}
			out.Release = s.Last
			out.Action = fmt.Sprintf("nothing to recover: revision %d is %s", s.Last.Version, s.Last.Info.Status)
			return nil
		}
		out.Action = s.Interrupted.Next(o.Rollback)
		err = d.drive(ctx, Wanted{Rollback: o.Rollback}, nil)
		out.Release = s.Interrupted.latest(ctx, d.Deps)
		return err
	})
	return out, err
}

// resuming tells that the journalled plan pl of the interrupted op of revision goes on, and
// which of its steps are left.
func (d *operation) resuming(op release.Operation, revision int, pl *plan.Plan) {
	var left []string
	for _, step := range pl.Steps {
		if !d.Done(step.ID) {
			left = append(left, step.ID)
		}
	}
	d.notify(fmt.Sprintf("the %s of revision %d goes on as its journal recorded it: %d of %d steps left: %s",
		op, revision, len(left), len(pl.Steps), strings.Join(left, ", ")))
}

// notify tells of a recovery through the progress events.
func (d *operation) notify(msg string) {
	d.emitter()(engine.Event{Type: engine.StepStarted, Step: "recover", Message: msg})
}

// NoDeployedError says an interrupted operation cannot be undone: the release has no deployed
// revision to roll back to; finishing it is the way on.
type NoDeployedError struct {
	Release   string
	Operation release.Operation
}

func (e *NoDeployedError) Error() string {
	return fmt.Sprintf("release %s has no deployed revision to roll back to", e.Release)
}
