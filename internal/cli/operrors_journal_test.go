package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// TestJournalRefusedHint: a refused journal that a grant resumes is told berth recover with the
// flags it asks for; one no grant resumes is told to delete its Secret, and no flag.
func TestJournalRefusedHint(t *testing.T) {
	t.Parallel()
	refused := func(reason string, g lifecycle.Grants) error {
		return fmt.Errorf("upgrade web: %w", &lifecycle.JournalRefusedError{Release: "web", Namespace: "team-a",
			Operation: release.OpUpgrade, Revision: 3, Reason: reason, Grant: g})
	}
	for _, tt := range []struct {
		name      string
		err       error
		want, not []string
	}{
		{"skips hooks", refused("it skips the release's hooks", lifecycle.Grants{NoHooks: []release.Operation{release.OpUpgrade}}),
			[]string{"berth recover web -n team-a --no-hooks resumes it", "kubectl delete secret -n team-a berth.journal.web"}, []string{"--take-ownership"}},
		{"skips hooks and takes ownership", refused("it skips the release's hooks", lifecycle.Grants{TakeOwnership: true, NoHooks: []release.Operation{release.OpUpgrade}}),
			[]string{"berth recover web -n team-a --no-hooks --take-ownership"}, nil},
		{"a plan outside the record", refused("its plan names objects the release's record does not hold", lifecycle.Grants{}),
			[]string{"no flag resumes it", "kubectl delete secret -n team-a berth.journal.web"}, []string{"berth recover", "--no-hooks"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := explainOperationError(tt.err).Error()
			if !strings.HasPrefix(got, tt.err.Error()) {
				t.Errorf("%q does not start with the error", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q does not say %q", got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("%q says %q", got, n)
				}
			}
		})
	}
}
