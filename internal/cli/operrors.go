package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
)

// explainOperationError adds to an operation's error what to do about it, in the flags a user of
// the command knows; the lifecycle's errors say what happened, not which flag changes it.
func explainOperationError(err error) error {
	var ve *chart.ValueExprError
	if errors.As(err, &ve) {
		// The expression's flag says it all; what wrapped it adds nothing.
		return fmt.Errorf("--%s %q: %w", ve.Source, ve.Expr, ve.Err)
	}
	if werr := windowFlagError(err); werr != nil {
		return werr
	}
	var hints []string
	if hint := sopsHint(err); hint != "" {
		hints = append(hints, hint)
	}
	var ns *lifecycle.NamespaceNotFoundError
	if errors.As(err, &ns) {
		hints = append(hints, "create it, or pass --create-namespace")
	}
	var own *lifecycle.OwnershipError
	if errors.As(err, &own) {
		hints = append(hints, "remove the objects, or pass --take-ownership to adopt them")
	}
	var immutable *lifecycle.ImmutableFieldError
	if errors.As(err, &immutable) && !immutable.ID.IsCRD() {
		hints = append(hints, "to change such a field, upgrade (or roll back) with --force-replace: the object is deleted and created again, and what it held goes with it")
	}
	var skipped *lifecycle.CRDsSkippedError
	if errors.As(err, &skipped) {
		hints = append(hints, "pass --crds create to create the missing CRDs first (--crds create-replace also updates those that exist)")
	}
	var held *release.HeldError
	if errors.As(err, &held) {
		hints = append(hints, "wait for it to finish, or pass --wait-for-lock")
	}
	var ie *lifecycle.InterruptedError
	if errors.As(err, &ie) {
		hints = append(hints, fmt.Sprintf("run berth recover %s to finish it (or berth recover %s --rollback to undo it), or run the command again", ie.Release, ie.Release))
	}
	var jr *lifecycle.JournalRefusedError
	if errors.As(err, &jr) {
		hints = append(hints, journalHint(jr))
	}
	var unverified *lifecycle.UnverifiedRollbackError
	if errors.As(err, &unverified) {
		hints = append(hints, "roll back to a verified revision (berth history shows which), or pass --allow-unverified to run the unverified chart anyway")
	}
	var nd *lifecycle.NoDeployedError
	if errors.As(err, &nd) {
		hints = append(hints, fmt.Sprintf("berth recover %s finishes the %s instead", nd.Release, nd.Operation))
	}
	var ee *readiness.ExpressionError
	if errors.As(err, &ee) {
		hints = append(hints, readinessHint(err))
	}
	var large *release.TooLargeError
	if errors.As(err, &large) {
		hints = append(hints, "nothing was changed: make the chart's files and templates smaller (files/, crds/ and large embedded data are kept whole in every revision's record)")
	}
	var incomplete *release.IncompleteRecordError
	if errors.As(err, &incomplete) {
		hints = append(hints, fmt.Sprintf("berth recover %s removes a record left incomplete by an operation that stopped; the next operation replaces it", incomplete.Name))
	}
	var re *cluster.RegressionError
	var fe *lifecycle.FailedError
	if errors.As(err, &re) && errors.As(err, &fe) {
		// What the regressed Pod showed (its state, its containers, its log tails), then what to do.
		for _, line := range re.Detail() {
			hints = append(hints, "  "+line)
		}
		hints = append(hints, regressionHint(fe))
	}
	var ue *lifecycle.UninstallError
	if errors.As(err, &ue) && !ue.NothingDeleted {
		hints = append(hints, fmt.Sprintf("once the cause is fixed, berth uninstall %s goes on from here", ue.Release))
	}
	switch {
	case len(hints) == 0:
		return err
	case len(hints) == 1 && !strings.Contains(err.Error(), "\n"):
		return &hintedError{err: err, hint: hints[0]}
	}
	return fmt.Errorf("%w\n%s", err, strings.Join(hints, "\n"))
}

// journalHint says how to resume a refused journal: with berth recover and the flags that grant
// what it asks, when a grant would do; otherwise by deleting its Secret.
func journalHint(e *lifecycle.JournalRefusedError) string {
	secret := fmt.Sprintf("kubectl delete secret -n %s %s", e.Namespace, release.JournalKey(e.Release))
	if !e.Granted() {
		return fmt.Sprintf("no flag resumes it: if no berth operation wrote it, %s, and the release's record alone says what was interrupted", secret)
	}
	flags := "--no-hooks"
	if e.Grant.TakeOwnership {
		flags += " --take-ownership"
	}
	return fmt.Sprintf("if a berth operation wrote it, berth recover %s -n %s %s resumes it as it asks; otherwise %s", e.Release, e.Namespace, flags, secret)
}

// readinessHint says what to change in a chart whose readiness annotation berth refused.
func readinessHint(err error) string {
	var long *readiness.TooLongError
	var many *readiness.TooManyError
	switch {
	case errors.As(err, &long):
		return fmt.Sprintf("the chart's readiness annotation is too long: each expression may have %d bytes at most", readiness.MaxExpressionLength)
	case errors.As(err, &many):
		return fmt.Sprintf("the chart's readiness annotation holds too many expressions: %d at most", readiness.MaxAnnotationExpressions)
	case errors.Is(err, readiness.ErrRecursiveDescents), errors.Is(err, readiness.ErrNestedFilter), errors.Is(err, readiness.ErrWideUnion):
		return fmt.Sprintf("a readiness expression's JSONPath may have one recursive descent (..), no filter within a filter, and unions picking %d values at most: change the chart's annotation", readiness.MaxPathUnion)
	}
	return "fix the chart's helm.sh/readiness-success or helm.sh/readiness-failure annotation: a JSON array of {<jsonpath>} <op> <value>"
}

// windowFlagError words the lifecycle's refusal of a watch window in the flags that set it; nil
// when err is no such refusal.
func windowFlagError(err error) error {
	var long *lifecycle.WindowTooLongError
	if errors.As(err, &long) {
		if long.Undo {
			return fmt.Errorf("--watch-for %s does not fit in --timeout %s: the window counts in it, and the last third of it is kept for undoing a failure (--rollback-on-failure, --cleanup-on-fail): the window must be shorter than %s; nothing was changed: pass a longer --timeout or a shorter --watch-for",
				long.For, long.Timeout, long.Own)
		}
		return fmt.Errorf("--watch-for %s does not fit in --timeout %s: the window counts in it and must be shorter; nothing was changed: pass a longer --timeout or a shorter --watch-for",
			long.For, long.Timeout)
	}
	var opt *lifecycle.WindowOptionError
	if errors.As(err, &opt) && opt.Option != "remediation" {
		return fmt.Errorf("invalid --watch-%s %s: want 0 or more; nothing was changed", opt.Option, opt.Value)
	}
	return nil
}

// regressionHint says where a release whose operation failed on a regression in its watch window
// is, and what to do.
func regressionHint(fe *lifecycle.FailedError) string {
	switch {
	case fe.Undo && fe.UndoErr == nil:
		return fmt.Sprintf("revision %d is recorded failed and the release was rolled back; fix what degraded, then upgrade again (--watch-tolerance and --watch-restarts say how much the window lets pass)", fe.Revision)
	case fe.Undo:
		return fmt.Sprintf("revision %d is recorded failed and rolling back did not finish: berth rollback %s goes back to the last good revision", fe.Revision, fe.Release)
	}
	return fmt.Sprintf("revision %d is recorded failed and left as it is: berth rollback %s goes back to the last good revision (--rollback-on-failure does so on its own)", fe.Revision, fe.Release)
}
