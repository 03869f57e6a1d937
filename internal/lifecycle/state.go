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
)

// Next decides what is done, in order, on a release in state s to do what w asks: an
// operation left interrupted is finished (or removed, or undone) first, unless finishing it is
// what was asked; then the operation asked for. An empty list does nothing.
func Next(s State, w Wanted) ([]Action, error) {
	var first []Action
	if in := s.Interrupted; in != nil {
		switch {
		case w.Operation == "" && w.Rollback && !in.Stale:
			return []Action{ActUndo}, nil
		case w.Operation == release.OpUninstall && in.Operation == release.OpUninstall:
			return []Action{ActFinish}, nil // the uninstall asked for is the one under way
		case w.Operation == "" || in.Stale:
			first = []Action{ActFinish}
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
	if s.Interrupted != nil && !s.Interrupted.Stale && s.Interrupted.Operation == release.OpInstall {
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
func (d *operation) readState(ctx context.Context, name string) (State, error) {
	var s State
	var err error
	if d.jstore != nil {
		if s.Interrupted, err = findInterrupted(ctx, d.Store, d.journals(), name); err != nil {
			return s, err
		}
	}
	s.Last, err = d.Store.Last(ctx, name)
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
func (d *operation) drive(ctx context.Context, w Wanted, do func(context.Context, Action, State) error) error {
	// Finishing or undoing leaves no operation interrupted, so the second decision is the last;
	// a third would mean an action left the state as it found it.
	for range 3 {
		s, err := d.readState(ctx, d.name)
		if err != nil {
			return err
		}
		acts, err := Next(s, w)
		if err != nil || len(acts) == 0 {
			return err
		}
		a, last := acts[0], len(acts) == 1
		in := s.Interrupted
		switch a {
		case ActFinish, ActUndo, ActRemoveHooks:
			d.notify(fmt.Sprintf("release %s: %s: %s", d.name, in.Describe(), in.Next(a == ActUndo)))
		}
		switch {
		case a == ActFinish && last && w.Operation == release.OpUninstall:
			// The uninstall asked for is the one interrupted: it goes on from its journal (one
			// left after the uninstall ended is deleted first).
			if in.Stale {
				if err := d.end(ctx, true); err != nil {
					return err
				}
			} else {
				d.resume, d.recovering = in.Journal, true
			}
			return do(ctx, ActUninstall, s)
		case a == ActFinish:
			err = d.finish(ctx, in)
			if err == nil && last && w.Operation != "" {
				err = do(ctx, ActFinish, s)
			}
		case a == ActUndo:
			err = d.abandon(ctx, in)
		case a == ActRemoveHooks:
			// The uninstall that follows replaces the interrupted operation, whose record stays
			// pending until the uninstall changes it: it goes on without deciding again.
			if err = d.abandonHooks(ctx, in); err == nil {
				err = d.end(ctx, true)
			}
			if err == nil && !last {
				return do(ctx, acts[1], s)
			}
		default:
			return do(ctx, a, s)
		}
		if err != nil || last {
			return err
		}
	}
	return fmt.Errorf("release %s: the state did not settle after three actions", d.name)
}
