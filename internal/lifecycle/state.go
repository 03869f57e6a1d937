package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/berthdev/berth/internal/release"
)

// State is what a release's records and journal say of it: what every decision of what to do
// next starts from, for the CLI and the controller alike.
type State struct {
	// Last is the release's newest revision; nil when none is recorded.
	Last *release.Release
	// Interrupted is the operation left unfinished; nil when there is none.
	Interrupted *Interrupted
	// Deployed says a revision of the release was deployed since it was last installed (its
	// newest revision, or one before it: a failed upgrade follows a deployed revision). A release
	// with none (never installed, or its first install failed) is still being installed.
	Deployed bool
	// LeftBehind says an operation on a release with no revision recorded left its lease, its
	// journal or an incomplete first record behind (LeftBehind): there is something to uninstall
	// although no revision is recorded.
	LeftBehind bool
}

// StateOf is the state that newest revision last (nil: none) says alone, no journal read: a
// revision left pending is its operation interrupted, as Helm leaves one.
func StateOf(last *release.Release) State {
	s := State{Last: last, Deployed: wasDeployed(last)}
	if last != nil && last.Info != nil && pending(last.Info.Status) {
		s.Interrupted = &Interrupted{Release: last.Name, Operation: operationOf(last.Info.Status), Last: last}
	}
	return s
}

// StateOfHistory is the state that history (a release's revisions, oldest first, as
// release.Reader's History returns them) says alone, no journal read: StateOf its newest
// revision, deployed if a revision since its last install was.
func StateOfHistory(history []*release.Release) State {
	if len(history) == 0 {
		return State{}
	}
	s := StateOf(history[len(history)-1])
	for i := len(history) - 1; i >= 0 && !s.Deployed; i-- {
		h := history[i]
		if h.Info != nil && h.Info.Status == release.StatusUninstalled {
			break // what came before the last uninstall was another installation
		}
		s.Deployed = wasDeployed(h)
	}
	return s
}

// wasDeployed says revision rel was deployed, or follows one that was: deployed, superseded, or
// an upgrade or rollback (pending, or its uninstall begun), which begin from a deployed revision.
func wasDeployed(rel *release.Release) bool {
	if rel == nil || rel.Info == nil {
		return false
	}
	switch rel.Info.Status {
	case release.StatusDeployed, release.StatusSuperseded, release.StatusPendingUpgrade, release.StatusPendingRollback, release.StatusUninstalling:
		return true
	}
	return false
}

// ReadState reads the state of release name from store as a caller that holds no lease reads it
// (no journal: Interrupted is what a pending revision says): its newest revision, and its history
// only when that revision alone does not say whether one was deployed (it failed).
func ReadState(ctx context.Context, store release.Reader, name string) (State, error) {
	last, err := store.Last(ctx, name)
	switch {
	case errors.Is(err, release.ErrNotFound):
		return State{}, nil
	case err != nil:
		return State{}, err
	}
	s := StateOf(last)
	if s.Deployed || last.Info == nil || last.Info.Status != release.StatusFailed || last.Version <= 1 {
		return s, nil
	}
	history, err := store.History(ctx, name)
	if err != nil {
		return State{}, err
	}
	return StateOfHistory(history), nil
}

// Retries is the operation whose retries a failed attempt at an install or upgrade of the
// release spends: install until a revision was deployed (a failed first install included),
// upgrade once one was.
func (s State) Retries() release.Operation {
	if s.Deployed {
		return release.OpUpgrade
	}
	return release.OpInstall
}

// Status names the state of a release. State.Status is the one place it is decided from what
// is read; Next decides from it.
type Status string

const (
	// StatusMissing: no revision is recorded.
	StatusMissing Status = "missing"
	// StatusUninstalled: only the revisions an uninstall kept are recorded.
	StatusUninstalled Status = "uninstalled"
	// StatusDeployed: the newest revision is deployed.
	StatusDeployed Status = "deployed"
	// StatusFailed: the newest revision's operation failed.
	StatusFailed Status = "failed"
	// StatusSuperseded: the newest revision is recorded superseded, with none newer (a record
	// deleted by hand).
	StatusSuperseded Status = "superseded"
	// StatusUnknown: the newest revision's status is none berth knows.
	StatusUnknown Status = "unknown"
	// StatusInterruptedInstall, StatusInterruptedUpgrade and StatusInterruptedRollback: the
	// operation was left unfinished (its journal says so, or its revision is left pending).
	StatusInterruptedInstall  Status = "interrupted-install"
	StatusInterruptedUpgrade  Status = "interrupted-upgrade"
	StatusInterruptedRollback Status = "interrupted-rollback"
	// StatusInterruptedUninstall: an uninstall was left unfinished before it deleted anything
	// (its pre-delete hooks ran, or began): the newest revision is not yet marked uninstalling.
	StatusInterruptedUninstall Status = "interrupted-uninstall"
	// StatusUninstalling: an uninstall was left unfinished once it began deleting: the newest
	// revision is marked uninstalling. It can only be finished.
	StatusUninstalling Status = "uninstalling"
	// StatusJournalLeft: a journal outlived its operation, which recorded its outcome: recovering
	// only deletes it.
	StatusJournalLeft Status = "journal-left"
)

// Status classifies s.
func (s State) Status() Status {
	if in := s.Interrupted; in != nil {
		if in.Stale {
			return StatusJournalLeft
		}
		switch in.Operation {
		case release.OpInstall:
			return StatusInterruptedInstall
		case release.OpUpgrade:
			return StatusInterruptedUpgrade
		case release.OpRollback:
			return StatusInterruptedRollback
		}
		if in.Last != nil && in.Last.Info != nil && in.Last.Info.Status == release.StatusUninstalling {
			return StatusUninstalling
		}
		return StatusInterruptedUninstall
	}
	if s.Last == nil {
		return StatusMissing
	}
	if s.Last.Info == nil {
		return StatusUnknown
	}
	switch s.Last.Info.Status {
	case release.StatusDeployed:
		return StatusDeployed
	case release.StatusUninstalled:
		return StatusUninstalled
	case release.StatusFailed:
		return StatusFailed
	case release.StatusSuperseded:
		return StatusSuperseded
	case release.StatusUninstalling:
		return StatusUninstalling // read without its journal (a dry run)
	case release.StatusPendingInstall:
		return StatusInterruptedInstall
	case release.StatusPendingUpgrade:
		return StatusInterruptedUpgrade
	case release.StatusPendingRollback:
		return StatusInterruptedRollback
	}
	return StatusUnknown
}

// Holds says whether the release already is what w asks: its newest revision deployed, of the
// chart version and values asked for.
func (s State) Holds(w Wanted) bool {
	return s.Status() == StatusDeployed && Releases(s.Last, w.ChartVersion, w.Values)
}

// Wanted is what a command, or a Release of the controller, asks of a release.
type Wanted struct {
	// Operation is install, upgrade, rollback, uninstall or test; "" asks only to recover.
	Operation release.Operation
	// Install lets an upgrade install a release that has no revision, or only an uninstalled
	// one (--install).
	Install bool
	// Rollback undoes the interrupted operation instead of finishing it (recover --rollback).
	Rollback bool
	// ChartVersion and Values are what an install or upgrade asks for. An interrupted install
	// or upgrade of the same chart version and values is finished, not done again: finishing it
	// is what was asked.
	ChartVersion string
	Values       map[string]any
	// Account, when the asker keeps one (a Release's status), is what it last said of the
	// release and of its own attempts: with it, Next also decides whether an install or upgrade
	// is needed at all, or only the account is behind.
	Account *Account
	// Grants are what the caller allows the resumption of an interrupted operation beyond the
	// defaults: what its journal asks is taken only where they grant it too.
	Grants Grants
}

// Account is what an asker that keeps its own account of a release (the controller, in a
// Release's status) last said: Next weighs it against the state read.
type Account struct {
	// Revision is the revision the account says is released; 0 when none.
	Revision int
	// AsAsked says the revision said released is of the chart version and values asked now.
	AsAsked bool
	// Current says the account says all of it: ready, for what is asked now, nothing blocking.
	Current bool
	// Attempted says the asker's last attempt was at what is asked now.
	Attempted bool
	// Underway says that attempt began and was not said to have ended: the asker stopped
	// during it.
	Underway bool
	// Failed says the attempt ended in a failure, said so.
	Failed bool
	// Retry says a failed attempt may be made again now (its retries and their backoff allow
	// it).
	Retry bool
	// NeverReleased says the account names no release: the asker never released one.
	NeverReleased bool
	// Stranded says no one may act for the release any more: the account the asker acts as lost
	// its rights, or never had them, as the namespace that held it is being deleted.
	Stranded bool
}

// Action is one thing Next decides to do.
type Action string

const (
	// ActFinish carries the interrupted operation to its end: its journalled plan as recorded, or
	// without a journal, a plan built from its record.
	ActFinish Action = "finish"
	// ActUndo undoes the interrupted operation (recover --rollback).
	ActUndo Action = "undo"
	// ActRemoveHooks removes the hook objects the interrupted operation left, as an uninstall
	// replaces that operation: the uninstall deletes its objects anyway.
	ActRemoveHooks Action = "remove-hooks"
	// The operations a command asks for.
	ActInstall   Action = "install"
	ActUpgrade   Action = "upgrade"
	ActRollback  Action = "rollback"
	ActUninstall Action = "uninstall"
	ActTest      Action = "test"

	// What Next decides with an Account.

	// ActNone: the release is what is asked and the account says so.
	ActNone Action = "none"
	// ActReport: the release is what is asked; only the account is behind.
	ActReport Action = "report"
	// ActReportReleased: the asker's own attempt, which it stopped during, released what is
	// asked: the account takes that revision, and says so.
	ActReportReleased Action = "report-released"
	// ActWait: the asker's last attempt at what is asked failed; it is not made again until
	// something changes, or its retries allow it.
	ActWait Action = "wait"
	// ActLetGo: an uninstall asked with an account (a Release being deleted) finds nothing to
	// uninstall (the account never released one, no revision is recorded and nothing left
	// behind, or only the revisions an uninstall kept), or no one left to uninstall it (the
	// account is stranded). The asker lets the release go.
	ActLetGo Action = "let-go"
)

// Next decides what is done, in order, on a release in state s to do what w asks. With an
// account (w.Account), a release already what is asked, an attempt at it that failed, or, for an
// uninstall, a release already gone, comes first (settled). Otherwise an operation left interrupted is finished (or removed, or undone)
// first, unless finishing it is what was asked; then the operation asked for. An empty list
// does nothing.
func Next(s State, w Wanted) ([]Action, error) {
	if acts := NextUnread(w); acts != nil {
		return acts, nil
	}
	status := s.Status()
	if a := settled(s, status, w); a != "" {
		return []Action{a}, nil
	}
	var first []Action
	if in := s.Interrupted; in != nil {
		switch {
		case status == StatusJournalLeft && w.Operation == release.OpUninstall && in.Operation == release.OpUninstall:
			return []Action{ActFinish}, nil // the uninstall asked for deletes it
		case status == StatusJournalLeft:
			first = []Action{ActFinish} // it deletes the journal
		case in.Incomplete > 0 && w.Operation != "":
			first = []Action{ActFinish} // it deletes the incomplete record
		case w.Operation == "" && w.Rollback:
			return []Action{ActUndo}, nil
		case w.Operation == "":
			first = []Action{ActFinish}
		case w.Operation == release.OpUninstall && (status == StatusInterruptedUninstall || status == StatusUninstalling):
			return []Action{ActFinish}, nil // the uninstall asked for is the one under way
		case w.Operation == release.OpUninstall:
			first = []Action{ActRemoveHooks}
		case Releases(in.Last, w.ChartVersion, w.Values) && finishes(in.Operation, w):
			return []Action{ActFinish}, nil // finishing it releases what was asked
		default:
			first = []Action{ActFinish}
		}
		if w.Operation == "" {
			return first, nil
		}
		// What the interrupted operation leaves once finished: its revision, deployed.
		if in.Operation != release.OpUninstall && in.Last != nil {
			s.Last = in.Last
		}
	}
	if w.Operation == "" {
		return nil, nil
	}
	absent := s.Last == nil || s.Last.Info.Status == release.StatusUninstalled
	if status == StatusInterruptedInstall {
		absent = false // the install is finished first
	}
	switch {
	case w.Operation == release.OpUpgrade && absent && w.Install:
		return append(first, ActInstall), nil
	case w.Operation == release.OpUpgrade && absent:
		return nil, &NotInstalledError{}
	}
	return append(first, Action(w.Operation)), nil
}

// NextUnread is what Next decides from w alone, whatever the release's state: ActLetGo for an
// uninstall asked with an account that never released one, or is stranded; nil when the state
// is needed. An asker calls it before it reads the state, which it may not be able to.
func NextUnread(w Wanted) []Action {
	if a := w.Account; a != nil && w.Operation == release.OpUninstall && (a.NeverReleased || a.Stranded) {
		return []Action{ActLetGo}
	}
	return nil
}

// settled is what an install, upgrade or uninstall asked with an account (w.Account) decides
// before any operation: nothing, a report, a wait, or letting go; "" when an operation is needed.
func settled(s State, status Status, w Wanted) Action {
	a := w.Account
	if a != nil && w.Operation == release.OpUninstall {
		if (status == StatusMissing && !s.LeftBehind) || status == StatusUninstalled {
			return ActLetGo
		}
		return ""
	}
	if a == nil || (w.Operation != release.OpInstall && w.Operation != release.OpUpgrade) {
		return ""
	}
	deployed := status == StatusDeployed
	switch {
	case deployed && s.Last.Version == a.Revision && a.AsAsked && a.Current:
		return ActNone
	case deployed && s.Last.Version == a.Revision && a.AsAsked:
		return ActReport
	case deployed && s.Last.Version != a.Revision && a.Underway && a.Attempted && Releases(s.Last, w.ChartVersion, w.Values):
		// The asker released this very thing and stopped before its account said so:
		// releasing again would record a second revision of one change.
		return ActReportReleased
	case a.Attempted && a.Failed && !a.Retry:
		return ActWait
	}
	return ""
}

// Installs says whether actions acts, decided by Next for a release in state s, amount to an
// install: they install it, or finish its interrupted install.
func (s State) Installs(acts []Action) bool {
	for _, a := range acts {
		if a == ActInstall || (a == ActFinish && s.Status() == StatusInterruptedInstall) {
			return true
		}
	}
	return false
}

// finishes says whether finishing interrupted operation op is what w asks: an install or an
// upgrade asked of one left interrupted (an upgrade asked with --install of an interrupted
// install too).
func finishes(op release.Operation, w Wanted) bool {
	switch w.Operation {
	case release.OpInstall:
		return op == release.OpInstall
	case release.OpUpgrade:
		return op == release.OpUpgrade || (op == release.OpInstall && w.Install)
	}
	return false
}

// Releases says whether revision rel is of chart version chartVersion with values: what an
// install or upgrade asking for them would record. Values compare as JSON, as they are recorded:
// numbers read back from a record are float64 whatever they were written as.
func Releases(rel *release.Release, chartVersion string, values map[string]any) bool {
	if rel == nil || chartVersion == "" || rel.Chart == nil || rel.Chart.Metadata == nil || rel.Chart.Metadata.Version != chartVersion {
		return false
	}
	if len(rel.Config) == 0 && len(values) == 0 {
		return true
	}
	a, err := json.Marshal(rel.Config)
	if err != nil {
		return false
	}
	b, err := json.Marshal(values)
	if err != nil {
		return false
	}
	return string(a) == string(b)
}

// NotInstalledError says an upgrade without --install found no revision to upgrade.
type NotInstalledError struct {
	Release, Namespace string
}

func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("release %q has no deployed revision in namespace %q: install it first, or upgrade with install", e.Release, e.Namespace)
}

// readState reads the state of release name as its operation does, holding its lease (or, for
// a dry run, without: Interrupted is then not read).
func (o *operation) readState(ctx context.Context, name string) (State, error) {
	var s State
	var err error
	if o.jstore != nil {
		if s.Interrupted, err = findInterrupted(ctx, o.Store, o.journals(), name); err != nil {
			return s, err
		}
	}
	s.Last, err = o.Store.Last(ctx, name)
	if errors.Is(err, release.ErrNotFound) {
		return s, nil
	}
	return s, err
}

// drive does what w asks of release name, holding its lease: one action at a time, each
// decided by Next from the state as it is then, until the action asked for ran. do runs that
// action (install, upgrade, rollback, uninstall or test), or, when finishing the interrupted
// operation is what was asked, says what it released (ActFinish). What an interrupted operation
// needs first (finish it, remove its hooks, undo it) drive does itself, each as a plan.
func (o *operation) drive(ctx context.Context, w Wanted, do func(context.Context, Action, State) error) error {
	// Finishing or undoing leaves no operation interrupted, so the second decision is the last;
	// a third would mean an action left the state as it found it.
	for range 3 {
		s, err := o.readState(ctx, o.name)
		if err != nil {
			return err
		}
		acts, err := Next(s, w)
		if err != nil || len(acts) == 0 {
			return err
		}
		a, last := acts[0], len(acts) == 1
		in := s.Interrupted
		o.act(a)
		switch a {
		case ActFinish, ActUndo, ActRemoveHooks:
			o.notify(fmt.Sprintf("release %s: %s: %s", o.name, in.Describe(), in.Next(a == ActUndo)))
		}
		switch {
		case a == ActFinish && last && w.Operation == release.OpUninstall:
			// The uninstall asked for is the one interrupted: it goes on from its journal (one
			// left after the uninstall ended is deleted first).
			if in.Stale {
				if err := o.end(ctx, true); err != nil {
					return err
				}
			} else {
				o.takeOver(in.Journal)
			}
			return do(ctx, ActUninstall, s)
		case a == ActFinish:
			err = o.finish(ctx, in, w.Grants)
			if err == nil && last && w.Operation != "" {
				err = do(ctx, ActFinish, s)
			}
		case a == ActUndo:
			err = o.abandon(ctx, in, w.Grants)
		case a == ActRemoveHooks:
			// The uninstall that follows replaces the interrupted operation, whose record stays
			// pending until the uninstall changes it: it goes on without deciding again.
			if err = o.abandonHooks(ctx, in); err == nil {
				err = o.end(ctx, true)
			}
			if err == nil && !last {
				o.act(acts[1])
				return do(ctx, acts[1], s)
			}
		default:
			return do(ctx, a, s)
		}
		if err != nil || last {
			return err
		}
	}
	return fmt.Errorf("release %s: the state did not settle after three actions", o.name)
}
