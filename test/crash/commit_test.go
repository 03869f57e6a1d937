package crash

import (
	"fmt"
	"testing"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
)

// TestS6RecoverRollbackKilledWhileRecordingOutcome kills a rollback inside its last step, which
// marks the deployed revision superseded and then the new one deployed: between the two writes
// no revision is deployed. The rollback is killed after its last journal write (every step but
// the last done) and the first write of the last step is made as berth makes it; berth recover
// --rollback then rolls back to the revision the rollback superseded, and berth recover in the
// same state finishes the rollback.
func TestS6RecoverRollbackKilledWhileRecordingOutcome(t *testing.T) {
	env := testenv.New(t)
	chart := crashChart(t)
	first := 1 // the journal write to kill after; the first case finds it, the second reuses it
	for _, tc := range []struct {
		name     string
		recover  []string
		want     content
		wantLast release.Status // of the rollback's revision, 3
	}{
		{name: "undo", recover: []string{"--rollback"}, want: "2", wantLast: release.StatusFailed},
		{name: "finish", want: "1", wantLast: release.StatusDeployed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := killInCommit(t, env, chart, "commit-"+tc.name, &first)
			args := append([]string{"recover", rel}, tc.recover...)
			r := berth(t, env, nil, args...)
			if r.err != nil {
				t.Fatalf("berth %v: %v\n%s", args, r.err, r.out)
			}
			got, problems := state(t.Context(), env, rel)
			if got != tc.want || len(problems) > 0 {
				t.Errorf("after berth %v: chart version %q (want %q), problems: %v\n%s", args, got, tc.want, problems, r.out)
			}
			rollback, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).Get(t.Context(), rel, 3)
			if err != nil || rollback.Info.Status != tc.wantLast {
				t.Errorf("after berth %v: the rollback's revision 3: %+v (%v), want %s", args, rollback.Info, err, tc.wantLast)
			}
		})
	}
}

// killInCommit installs a release, upgrades it and rolls it back to revision 1, killed after its
// last journal write; then it marks the revisions the rollback's last step supersedes as
// superseded, as that step does before it records the rollback's revision deployed. It returns
// the release's name: prefix-N, killed after journal write N. It tries N from *from on and sets
// *from to the N it took; the releases of the trials before are left as their kill left them.
func killInCommit(t *testing.T, env *testenv.Env, chart, prefix string, from *int) string {
	t.Helper()
	journals := release.NewJournals(env.Client.CoreV1(), env.Namespace)
	store := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	for n := *from; n <= 30; n++ {
		name := fmt.Sprintf("%s-%d", prefix, n)
		mustBerth(t, env, "install", name, chart)
		mustBerth(t, env, "upgrade", name, chart, "--set", "version=2")
		r := berth(t, env, []string{fmt.Sprintf("BERTH_TEST_KILL_AFTER_STEP=%d", n)}, "rollback", name, "1")
		if !r.killed {
			t.Fatalf("rollback of %s was not killed after journal write %d: %v\n%s", name, n, r.err, r.out)
		}
		j, err := journals.Get(t.Context(), name)
		if err != nil || j == nil || j.Plan == nil {
			t.Fatalf("journal of %s after a kill after write %d: %+v (%v)", name, n, j, err)
		}
		if len(j.Steps) < len(j.Plan.Steps)-1 {
			continue // not yet the write before the last step
		}
		commit := j.Plan.Steps[len(j.Plan.Steps)-1]
		if commit.Action != plan.Record || commit.Status != string(release.StatusDeployed) || len(commit.Supersedes) == 0 {
			t.Fatalf("last step of the rollback: %+v, want one that records revision %d deployed and supersedes the deployed one", commit, j.Revision)
		}
		for _, v := range commit.Supersedes {
			prev, err := store.Get(t.Context(), name, v)
			if err != nil {
				t.Fatal(err)
			}
			prev.Info.Status = release.StatusSuperseded
			if err := store.Update(t.Context(), prev); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := store.Deployed(t.Context(), name); err == nil {
			t.Fatalf("%s has a deployed revision after its deployed one was superseded", name)
		}
		*from = n
		return name
	}
	t.Fatalf("rollback of %s-N: no journal write left every step but the last done", prefix)
	return ""
}
