package controller

import (
	"fmt"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// ReasonJournalRefused is a release whose interrupted operation's journal was not resumed: it
// asks for what the Release's spec does not grant (skipping hooks; the controller never grants
// taking ownership), or its plan touches what the release's record does not hold. Nothing was
// changed by it.
const ReasonJournalRefused = "JournalRefused"

// journalBlocker names the refused journal's Secret, what it asked for, and what resumes it.
func journalBlocker(e *lifecycle.JournalRefusedError) v1alpha1.Blocker {
	return v1alpha1.Blocker{
		Kind:    "journal",
		Object:  fmt.Sprintf("Secret/%s/%s", e.Namespace, release.JournalKey(e.Release)),
		Message: fmt.Sprintf("the journal of the %s of revision %d is refused: %s", e.Operation, e.Revision, e.Reason),
		Next:    journalNext(e),
	}
}

// journalNext says what resumes a refused journal, or lets the release go on without it.
func journalNext(e *lifecycle.JournalRefusedError) string {
	secret := fmt.Sprintf("Secret %s/%s", e.Namespace, release.JournalKey(e.Release))
	if !e.Granted() {
		return fmt.Sprintf("no grant resumes it: delete %s if no berth operation wrote it; the release's record alone then says what was interrupted", secret)
	}
	flags := "--no-hooks"
	if e.Grant.TakeOwnership {
		flags += " --take-ownership"
	}
	return fmt.Sprintf("if a berth operation wrote it, berth recover %s -n %s %s resumes it as it asks (the controller never takes ownership; it skips hooks only with the Release's disableHooks); otherwise delete %s",
		e.Release, e.Namespace, flags, secret)
}
