package controller

import (
	"fmt"
	"strings"
	"testing"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// TestJournalRefusedCondition: a refused journal is JournalRefused, its message naming the
// journal's Secret and what it asked, its blocker what resumes it.
func TestJournalRefusedCondition(t *testing.T) {
	refused := func(reason string, g lifecycle.Grants) error {
		return fmt.Errorf("upgrade web: %w", &lifecycle.JournalRefusedError{Release: "web", Namespace: "team-a",
			Operation: release.OpUpgrade, Revision: 3, Reason: reason, Grant: g})
	}
	for _, tt := range []struct {
		name string
		err  error
		next []string
	}{
		{"skips hooks and takes ownership", refused("it skips the release's hooks, which the caller does not (--no-hooks, or the Release's disableHooks)",
			lifecycle.Grants{TakeOwnership: true, NoHooks: []release.Operation{release.OpUpgrade}}),
			[]string{"berth recover web -n team-a --no-hooks --take-ownership", "disableHooks", "delete Secret team-a/berth.journal.web"}},
		{"a plan outside the record", refused("its plan names objects the release's record does not hold", lifecycle.Grants{}),
			[]string{"no grant resumes it", "delete Secret team-a/berth.journal.web"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rel := &v1alpha1.Release{}
			reason := reasonOf(tt.err, ReasonUpgradeFailed)
			markFailed(rel, reason, tt.err, false)
			if reason != ReasonJournalRefused {
				t.Errorf("reason %s, want %s", reason, ReasonJournalRefused)
			}
			msg := rel.Status.Conditions[0].Message
			for _, w := range []string{"Secret/team-a/berth.journal.web", "the journal of the upgrade of release web revision 3 is refused"} {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
			b := rel.Status.Blockers
			if len(b) != 1 || b[0].Kind != "journal" || b[0].Object != "Secret/team-a/berth.journal.web" {
				t.Fatalf("blockers %+v, want the journal's Secret", b)
			}
			for _, w := range tt.next {
				if !strings.Contains(b[0].Next, w) {
					t.Errorf("next %q does not say %q", b[0].Next, w)
				}
			}
		})
	}
}
