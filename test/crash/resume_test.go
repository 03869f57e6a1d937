package crash

import (
	"slices"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
)

// TestResumeRunsTheJournalledPlan kills an upgrade after its second journal write, with steps
// left, and runs the same upgrade again. The second run finishes the interrupted upgrade as its
// journal recorded it and does nothing more: it makes no dry-run request (nothing is validated
// or planned again), says which steps were left, and records no third revision, since finishing
// the upgrade released what was asked.
func TestResumeRunsTheJournalledPlan(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := crashChart(t)
	const name = "resume"
	mustBerth(t, env, "install", name, chart)
	upgrade := []string{"upgrade", name, chart, "--set", "version=2"}
	if r := berth(t, env, []string{"BERTH_TEST_KILL_AFTER_STEP=2"}, upgrade...); !r.killed {
		t.Fatalf("the upgrade was not killed after its second journal write: %v\n%s", r.err, r.out)
	}
	j, err := release.NewJournals(env.Client.CoreV1(), env.Namespace).Get(t.Context(), name)
	if err != nil || j == nil || j.Plan == nil || len(j.Steps) >= len(j.Plan.Steps) {
		t.Fatalf("journal after the kill: %+v (%v), want one with steps left", j, err)
	}

	mark := env.AuditMark(t)
	r := berth(t, env, nil, upgrade...)
	if r.err != nil {
		t.Fatalf("berth %v: %v\n%s", upgrade, r.err, r.out)
	}
	if !strings.Contains(r.out, "goes on as its journal recorded it") {
		t.Errorf("the second upgrade does not say it goes on with the journalled plan:\n%s", r.out)
	}
	var dryRuns []string
	for _, ev := range env.AuditEvents(t, mark) {
		if ev.DryRun && strings.HasPrefix(ev.UserAgent, "berth") {
			dryRuns = append(dryRuns, ev.Verb+" "+ev.Resource+"/"+ev.Name)
		}
	}
	if len(dryRuns) > 0 {
		t.Errorf("finishing the interrupted upgrade made dry-run requests: %v", dryRuns)
	}
	got, problems := state(t.Context(), env, name)
	if got != "2" || len(problems) > 0 {
		t.Errorf("after the second upgrade: chart version %q (want 2), problems: %v\n%s", got, problems, r.out)
	}
	history, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).History(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	var versions []int
	for _, rel := range history {
		versions = append(versions, rel.Version)
	}
	slices.Sort(versions)
	if !slices.Equal(versions, []int{1, 2}) {
		t.Errorf("revisions after the second upgrade: %v, want [1 2]: finishing the upgrade was what was asked", versions)
	}
}

// TestUninstallReplacesInterruptedInstall kills an install after its second journal write and
// uninstalls the release: the uninstall removes the hooks the install left and then uninstalls,
// although the install's record stays pending until the uninstall changes it.
func TestUninstallReplacesInterruptedInstall(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := crashChart(t)
	const name = "replaced"
	if r := berth(t, env, []string{"BERTH_TEST_KILL_AFTER_STEP=2"}, "install", name, chart); !r.killed {
		t.Fatalf("the install was not killed after its second journal write: %v\n%s", r.err, r.out)
	}
	r := berth(t, env, nil, "uninstall", name, "--wait")
	if r.err != nil {
		t.Fatalf("uninstall after the interrupted install: %v\n%s", r.err, r.out)
	}
	if got, problems := state(t.Context(), env, name); got != "" || len(problems) > 0 {
		t.Errorf("after the uninstall: chart version %q (want none), problems: %v\n%s", got, problems, r.out)
	}
}
