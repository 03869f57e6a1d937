package controller

import (
	"fmt"
	"time"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
)

// defaultWatchTolerance is how long an object may stay not ready in a watch window when
// watchTolerance is not set: a Deployment scaled up is not ready for a moment.
const defaultWatchTolerance = 30 * time.Second

// ReasonWatchWindowTooLong: the watch window of spec.install or spec.upgrade does not fit in the
// operation's timeout. Nothing is done until the spec changes.
const ReasonWatchWindowTooLong = "WatchWindowTooLong"

// watchOf checks the watch window of spec.install or spec.upgrade (field) and returns it as the
// lifecycle takes it: none when watchFor is unset or 0, the tolerance and restarts with their
// defaults otherwise.
func watchOf(field string, w v1alpha1.WatchSpec) (lifecycle.WatchOptions, error) {
	var o lifecycle.WatchOptions
	if w.WatchFor != nil {
		if w.WatchFor.Duration < 0 {
			return o, invalid(field+".watchFor", "must not be negative: give a duration like 1m, or 0 for no window")
		}
		o.For = w.WatchFor.Duration
	}
	o.Tolerance = defaultWatchTolerance
	if w.WatchTolerance != nil {
		if w.WatchTolerance.Duration < 0 {
			return o, invalid(field+".watchTolerance", "must not be negative: give a duration like 30s")
		}
		o.Tolerance = w.WatchTolerance.Duration
	}
	if w.WatchRestarts != nil {
		if *w.WatchRestarts < 0 {
			return o, invalid(field+".watchRestarts", "must not be negative")
		}
		o.Restarts = int(*w.WatchRestarts)
	}
	switch w.WatchRemediation {
	case "":
		o.Remediation = lifecycle.RemediateAsFailure
	case v1alpha1.WatchRemediationRollback:
		o.Remediation = lifecycle.RemediateRollback
	case v1alpha1.WatchRemediationNone:
		o.Remediation = lifecycle.RemediateNone
	default:
		return o, invalid(field+".watchRemediation", "%q is neither Rollback nor None", w.WatchRemediation)
	}
	if o.For == 0 {
		return lifecycle.WatchOptions{}, nil
	}
	return o, nil
}

// keepsUndoTime says whether an operation keeps the last third of its time for undoing it: with
// rollback on failure, or when a regression in its window rolls it back.
func keepsUndoTime(rollbackOnFailure bool, w lifecycle.WatchOptions) bool {
	return rollbackOnFailure || w.Remediation == lifecycle.RemediateRollback
}

// undoShare is the share of an operation's time kept for undoing it: the lifecycle ends its own
// steps, the watch window included, a third of its time early when it rolls back on failure.
const undoShare = 3

// WatchWindowError says the watch window of spec.install or spec.upgrade (Field) does not fit in
// the operation's time: For must be shorter than Timeout, or than Limit, two thirds of it, when
// the operation keeps the last third for its undo (Undo).
type WatchWindowError struct {
	Field   string
	For     time.Duration
	Timeout time.Duration
	// Capped says Timeout is the controller's maximum (--max-timeout), under spec.timeout.
	Capped bool
	Undo   bool
	Limit  time.Duration
}

func (e *WatchWindowError) Error() string {
	timeout := fmt.Sprintf("the timeout of %s", e.Timeout)
	if e.Capped {
		timeout = fmt.Sprintf("the controller's maximum timeout of %s (--max-timeout)", e.Timeout)
	}
	if e.Undo {
		return fmt.Sprintf("spec.%s.watchFor %s does not fit in %s: the operation rolls back on failure and keeps the last third of its time for it, so the window must be shorter than %s; shorten watchFor, or lengthen spec.timeout",
			e.Field, e.For, timeout, e.Limit)
	}
	return fmt.Sprintf("spec.%s.watchFor %s does not fit in %s: the window must be shorter than the timeout; shorten watchFor, or lengthen spec.timeout", e.Field, e.For, timeout)
}

func (e *WatchWindowError) conditionReason() string { return ReasonWatchWindowTooLong }

// checkWindow checks that the watch window w of spec.install or spec.upgrade (field) fits in an
// operation of timeout (capped: the controller's maximum), as the lifecycle requires before it
// changes anything.
func checkWindow(field string, w lifecycle.WatchOptions, rollbackOnFailure bool, timeout time.Duration, capped bool) error {
	if w.For <= 0 {
		return nil
	}
	undo := keepsUndoTime(rollbackOnFailure, w)
	limit := timeout
	if undo {
		limit = timeout - timeout/undoShare
	}
	if w.For < limit {
		return nil
	}
	return &WatchWindowError{Field: field, For: w.For, Timeout: timeout, Capped: capped, Undo: undo, Limit: limit}
}

// checkWindows checks the watch windows of d's install and upgrade against its timeout, once
// the controller's limits apply to it (withLimits); capped says they lowered it.
func checkWindows(d *desired, capped bool) error {
	if err := checkWindow("install", d.InstallWatch, d.Install.RollbackOnFailure, d.Timeout, capped); err != nil {
		return err
	}
	return checkWindow("upgrade", d.UpgradeWatch, d.Upgrade.RollbackOnFailure, d.Timeout, capped)
}

// watchFor is the window of the install or upgrade op.
func (d *desired) watchFor(op string) time.Duration {
	if op == "install" {
		return d.InstallWatch.For
	}
	return d.UpgradeWatch.For
}

// watches says whether an install or upgrade of d watches the release once it is Ready.
func (d *desired) watches() bool { return d.InstallWatch.For > 0 || d.UpgradeWatch.For > 0 }

// waits says whether the install or upgrade op waits until the release is ready: unless
// disableWait, and always with rollbackOnFailure or a watch window.
func (d *desired) waits(op string) bool {
	if op == "install" {
		return !d.Install.DisableWait || d.Install.RollbackOnFailure || d.InstallWatch.For > 0
	}
	return !d.Upgrade.DisableWait || d.Upgrade.RollbackOnFailure || d.UpgradeWatch.For > 0
}
