package lifecycle

import (
	"context"
	"fmt"
	"time"
)

// WaitOptions are the --wait family of flags.
type WaitOptions struct {
	Wait        bool
	WaitForJobs bool
	// Timeout bounds the whole operation; 0 means Helm's default of five minutes.
	Timeout time.Duration
	// WaitForLock waits (within Timeout) for the release's lease when another operation holds
	// it, instead of failing at once.
	WaitForLock bool
	// Began is when the operation's time started counting, when its caller prepared it under the
	// same deadline (fetched the chart, read the cluster's capabilities: see Bound); zero means it
	// starts with the lifecycle call.
	Began time.Time
	// Ordered applies the release in the batches its chart declares (HIP-0025's --wait=ordered),
	// each waited for before the next; an uninstall deletes them in reverse. OrderIfDeclared does
	// so only when the chart declares an order (the controller).
	Ordered, OrderIfDeclared bool
	// Watch, when its For is set, watches the release once it is Ready (--watch-for): a
	// regression in the window fails the operation. It implies Wait.
	Watch WatchOptions
}

// WatchOptions are the window in which an install, upgrade or rollback watches its release once
// Ready, before it records the revision deployed (--watch-for): the revision stays pending
// meanwhile, and the window counts in the operation's Timeout.
type WatchOptions struct {
	// For is how long the window lasts; 0 means none.
	For time.Duration
	// Tolerance is how long an object may stay not ready in the window before that is a
	// regression (--watch-tolerance).
	Tolerance time.Duration
	// Restarts is how many times each container may restart in the window (--watch-restarts).
	Restarts int
	// Remediation is what a regression in the window does: by default, what the operation's
	// RollbackOnFailure says of any failure.
	Remediation Remediation
}

// Remediation is what a regression in the watch window does.
type Remediation string

const (
	// RemediateAsFailure does what any failure of the operation does: roll back with
	// RollbackOnFailure, nothing more without.
	RemediateAsFailure Remediation = ""
	// RemediateRollback rolls back to the last good revision (an install: uninstalls), with or
	// without RollbackOnFailure.
	RemediateRollback Remediation = "rollback"
	// RemediateNone records the revision failed and leaves the release as it is, even with
	// RollbackOnFailure.
	RemediateNone Remediation = "none"
)

// undoes says which failures of an operation with rollback on failure (rollbackOnFailure) are
// undone: any (failure), or a regression in its watch window (regression).
func (w WatchOptions) undoes(rollbackOnFailure bool) (failure, regression bool) {
	regression = w.For > 0 && ((rollbackOnFailure && w.Remediation != RemediateNone) || w.Remediation == RemediateRollback)
	return rollbackOnFailure, regression
}

// checkWindow refuses, before anything changes, a watch window the operation cannot hold: an
// option out of range, or a window not shorter than the time the operation's own steps get:
// Timeout, or when a failure may be undone (undone), the two thirds of it before the last third
// kept for the undo.
func (w WaitOptions) checkWindow(undone bool) error {
	wo := w.Watch
	switch {
	case wo.For < 0:
		return &WindowOptionError{Option: "for", Value: wo.For.String()}
	case wo.Tolerance < 0:
		return &WindowOptionError{Option: "tolerance", Value: wo.Tolerance.String()}
	case wo.Restarts < 0:
		return &WindowOptionError{Option: "restarts", Value: fmt.Sprint(wo.Restarts)}
	}
	switch wo.Remediation {
	case RemediateAsFailure, RemediateRollback, RemediateNone:
	default:
		return &WindowOptionError{Option: "remediation", Value: string(wo.Remediation)}
	}
	if wo.For == 0 {
		return nil
	}
	t := w.total()
	own := t
	if undone {
		own = t - t/undoShare
	}
	if wo.For >= own {
		return &WindowTooLongError{For: wo.For, Timeout: t, Own: own, Undo: undone}
	}
	return nil
}

// WindowOptionError says an option of the watch window is out of range (a negative duration or
// count, an unknown remediation): nothing was changed.
type WindowOptionError struct {
	// Option is "for", "tolerance", "restarts" or "remediation".
	Option, Value string
}

func (e *WindowOptionError) Error() string {
	if e.Option == "remediation" {
		return fmt.Sprintf("watch window: unknown remediation %q: want %q or %q", e.Value, RemediateRollback, RemediateNone)
	}
	return fmt.Sprintf("watch window: %s must not be negative, got %s", e.Option, e.Value)
}

// WindowTooLongError says the watch window does not fit in the operation's time: For is not
// shorter than Own, the time the operation's own steps get of Timeout (two thirds of it when a
// failure may be undone, Undo: the last third is kept for the undo). Nothing was changed.
type WindowTooLongError struct {
	For, Timeout, Own time.Duration
	Undo              bool
}

func (e *WindowTooLongError) Error() string {
	if e.Undo {
		return fmt.Sprintf("the watch window of %s does not fit in the operation's deadline of %s: it must be shorter than the %s before the last third, kept for undoing a failure; nothing was changed",
			e.For, e.Timeout, e.Own)
	}
	return fmt.Sprintf("the watch window of %s does not fit in the operation's deadline of %s: it must be shorter, the window counts in it; nothing was changed",
		e.For, e.Timeout)
}

func (w WaitOptions) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, w.limit(), fmt.Errorf("timed out after %s, the operation's deadline", w.total()))
}

// Bound returns ctx ending at the operation's deadline, for what its caller does before the
// lifecycle call under that deadline: set Began first.
func (w WaitOptions) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return w.deadline(ctx)
}

// undoShare is the share of an operation's time kept for undoing it when it fails, with
// rollback on failure: its own steps end before, so that rolling back always has time.
const undoShare = 3

// forward is the context of an operation's own steps: ctx, whose deadline is the operation's,
// or with rollback on failure, ctx ending a third of the operation's time earlier, kept for the
// undo.
func (w WaitOptions) forward(ctx context.Context, rollbackOnFailure bool) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !rollbackOnFailure || !ok {
		return ctx, func() {}
	}
	t := w.total()
	kept := t / undoShare
	return context.WithDeadlineCause(ctx, dl.Add(-kept),
		fmt.Errorf("timed out after %s: the operation's deadline is %s, of which the last %s is kept for rolling back on failure", t-kept, t, kept))
}

// total is the operation's time: Timeout, or Helm's default of five minutes.
func (w WaitOptions) total() time.Duration {
	if w.Timeout <= 0 {
		return 5 * time.Minute
	}
	return w.Timeout
}

// limit is what is left of the operation's time: all of it, or what is left since it Began.
func (w WaitOptions) limit() time.Duration {
	if w.Began.IsZero() {
		return w.total()
	}
	return max(w.total()-time.Since(w.Began), 0)
}

// DryRun says whether and how an operation only pretends.
type DryRun string

const (
	NoDryRun     DryRun = ""
	ClientDryRun DryRun = "client"
	ServerDryRun DryRun = "server"
)
