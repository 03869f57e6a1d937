package lifecycle

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

func TestGrantsNarrow(t *testing.T) {
	asked := release.JournalOptions{TakeOwnership: true, NoHooks: true, Wait: true, Cascade: "orphan"}
	for _, tc := range []struct {
		name       string
		g          Grants
		take, skip bool
	}{
		{"none", Grants{}, false, false},
		{"take", Grants{TakeOwnership: true}, true, false},
		{"hooks of another operation", grantsOf(false, true, release.OpInstall), false, false},
		{"hooks", grantsOf(true, true, release.OpUpgrade), true, true},
	} {
		got := tc.g.narrow(release.OpUpgrade, asked)
		if got.TakeOwnership != tc.take || got.NoHooks != tc.skip || !got.Wait || got.Cascade != "orphan" {
			t.Errorf("%s: got %+v", tc.name, got)
		}
	}
	if got := (Grants{TakeOwnership: true}).narrow(release.OpUpgrade, release.JournalOptions{}); got.TakeOwnership {
		t.Errorf("a grant the journal does not ask for widened it: %+v", got)
	}
}

func TestCheckJournal(t *testing.T) {
	cm := resource.Identity{Kind: "ConfigMap", Namespace: "ns", Name: "own"}
	old := resource.Identity{Kind: "ConfigMap", Namespace: "ns", Name: "old"}
	hook := resource.Identity{Group: "batch", Kind: "Job", Namespace: "ns", Name: "pre"}
	theirs := resource.Identity{Kind: "ConfigMap", Namespace: "ns", Name: "theirs"}
	scope := journalScope{own: map[resource.Identity]bool{cm: true}, deletable: map[resource.Identity]bool{old: true},
		hooks: map[resource.Identity]bool{hook: true}, namespace: "ns", hookEvents: []resource.HookEvent{resource.HookPreUpgrade}}
	hooks := plan.Step{ID: "hooks/pre-upgrade", Action: plan.RunHooks, Hook: "pre-upgrade", Objects: []resource.Identity{hook}}
	good := []plan.Step{hooks, {ID: "apply", Action: plan.Apply, Objects: []resource.Identity{cm}},
		{ID: "delete", Action: plan.Delete, Objects: []resource.Identity{old}}, {ID: "record", Action: plan.Record, Revision: 3, Supersedes: []int{2}}}
	for _, tc := range []struct {
		name   string
		steps  []plan.Step
		opts   release.JournalOptions
		grant  release.JournalOptions
		refuse string
	}{
		{name: "as planned", steps: good},
		{name: "applies another's", steps: append([]plan.Step{hooks}, plan.Step{ID: "apply", Action: plan.Apply, Objects: []resource.Identity{cm, theirs}}), refuse: "ConfigMap/ns/theirs"},
		{name: "deletes another's", steps: append([]plan.Step{hooks}, plan.Step{ID: "delete", Action: plan.Delete, Objects: []resource.Identity{theirs}}), refuse: "ConfigMap/ns/theirs"},
		{name: "runs a hook it has not", steps: []plan.Step{{ID: "hooks/pre-upgrade", Action: plan.RunHooks, Hook: "pre-upgrade", Objects: []resource.Identity{theirs}}}, refuse: "does not hold"},
		{name: "deletes a namespace", steps: append([]plan.Step{hooks}, plan.Step{ID: "ns", Action: plan.DeleteNamespace, Objects: []resource.Identity{{Kind: "Namespace", Name: "other"}}}), refuse: "Namespace"},
		{name: "records another revision", steps: append([]plan.Step{hooks}, plan.Step{ID: "record", Action: plan.Record, Revision: 9}), refuse: "records revision 9"},
		{name: "supersedes a later revision", steps: append([]plan.Step{hooks}, plan.Step{ID: "record", Action: plan.Record, Revision: 3, Supersedes: []int{4}}), refuse: "supersedes"},
		{name: "leaves out hooks", steps: good[1:], refuse: "leaves out the release's pre-upgrade hooks"},
		{name: "leaves out hooks granted", steps: good[1:], opts: release.JournalOptions{NoHooks: true}, grant: release.JournalOptions{NoHooks: true}},
		{name: "skips hooks not granted", steps: good, opts: release.JournalOptions{NoHooks: true}, refuse: "skips the release's hooks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &release.Journal{Release: "app", Operation: release.OpUpgrade, Revision: 3, Options: tc.opts, Plan: &plan.Plan{Steps: tc.steps}}
			err := checkJournal(j, scope, tc.grant)
			if tc.refuse == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var refused *JournalRefusedError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.refuse) || !strings.Contains(err.Error(), "Secret/ns/berth.journal.app") {
				t.Fatalf("got %v, want a *JournalRefusedError naming Secret/ns/berth.journal.app and %q", err, tc.refuse)
			}
			// Only a journal that skips hooks is resumed by a grant: skipping them too.
			if hooks := strings.Contains(tc.refuse, "hooks"); refused.Granted() != hooks || hooks && !slices.Equal(refused.Grant.NoHooks, []release.Operation{release.OpUpgrade}) {
				t.Errorf("grant %+v, want skipping the upgrade's hooks: %v", refused.Grant, hooks)
			}
		})
	}
}
