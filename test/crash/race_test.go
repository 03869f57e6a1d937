package crash

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestS6RacingProcessesOneProceeds starts two upgrades of one release at once, and a third with --wait-for-lock: exactly
// one of the two proceeds, the other names who holds the release and since when; the third waits
// and proceeds after.
func TestS6RacingProcessesOneProceeds(t *testing.T) {
	env := testenv.New(t)
	ch := crashChart(t)
	mustBerth(t, env, "install", "race", ch)
	args := []string{"upgrade", "race", ch, "--set", "version=2", "--set", "hookRun=3s"}
	a := berthProcess(t, env, nil, args...)
	b := berthProcess(t, env, nil, args...)
	// Once one of them holds the lease, the third must wait for it.
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, live, err := release.NewLeases(env.Client.CoordinationV1(), env.Namespace).Holder(ctx, "race")
		return live, err
	})
	if err != nil {
		t.Fatalf("neither upgrade took the lease: %v", err)
	}
	c := berthProcess(t, env, nil, append(args, "--wait-for-lock")...)
	ra, rb, rc := a.wait(), b.wait(), c.wait()
	var ok, refused []run
	for _, r := range []run{ra, rb} {
		if r.err == nil {
			ok = append(ok, r)
		} else {
			refused = append(refused, r)
		}
	}
	if len(ok) != 1 {
		t.Fatalf("%d of two concurrent upgrades proceeded, want 1:\n%s\n---\n%s", len(ok), ra.out, rb.out)
	}
	if out := refused[0].out; !strings.Contains(out, "is being changed by") || !strings.Contains(out, "since") || !strings.Contains(out, "berth upgrade race") {
		t.Errorf("the refused upgrade does not say who holds the release and since when:\n%s", out)
	}
	if rc.err != nil {
		t.Errorf("upgrade with --wait-for-lock: %v\n%s", rc.err, rc.out)
	}
	history, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).History(t.Context(), "race")
	if err != nil || len(history) != 3 {
		t.Errorf("history of %d revisions (%v), want 3: install and two upgrades", len(history), err)
	}
	if _, problems := state(t.Context(), env, "race"); len(problems) > 0 {
		t.Errorf("not consistent: %v", problems)
	}
}

// TestS6RecoverReleaseHelmLeftPending recovers a release that a killed Helm left pending-upgrade: no lease, no
// journal, only Helm's record of the new revision.
func TestS6RecoverReleaseHelmLeftPending(t *testing.T) {
	env := testenv.New(t)
	dir := crashChart(t)
	mustBerth(t, env, "install", "helm", dir)

	store := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	first, err := store.Last(t.Context(), "helm")
	if err != nil {
		t.Fatal(err)
	}
	ch, err := chart.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{"version": 2}
	r, err := chart.Render(t.Context(), ch, vals, chart.RenderOptions{ReleaseName: "helm", Namespace: env.Namespace, Revision: 2, IsUpgrade: true})
	if err != nil {
		t.Fatal(err)
	}
	// As Helm's upgrade records it before its first change.
	pendingRel := &release.Release{Name: "helm", Namespace: env.Namespace, Version: 2,
		Chart: r.Chart, Config: r.Config, Manifest: r.Manifest, Hooks: r.ReleaseHooks,
		Info: &release.Info{FirstDeployed: first.Info.FirstDeployed, LastDeployed: time.Now(),
			Status: release.StatusPendingUpgrade, Description: "Preparing upgrade"}}
	if err := store.Create(t.Context(), pendingRel); err != nil {
		t.Fatal(err)
	}
	if out := mustBerth(t, env, "status", "helm"); !strings.Contains(out, "INTERRUPTED: upgrade of revision 2") || !strings.Contains(out, "berth recover helm") {
		t.Errorf("status does not show the interrupted upgrade:\n%s", out)
	}
	mustBerth(t, env, "recover", "helm")
	got, problems := state(t.Context(), env, "helm")
	if got != "2" || len(problems) > 0 {
		t.Errorf("after recover: chart version %q (want 2), problems: %v", got, problems)
	}
	if last, err := store.Last(t.Context(), "helm"); err != nil || last.Version != 2 || last.Info.Status != release.StatusDeployed {
		t.Errorf("after recover: newest revision %+v (%v), want 2 deployed", last, err)
	}
	if out := mustBerth(t, env, "status", "helm"); strings.Contains(out, "INTERRUPTED") {
		t.Errorf("status after recover still shows an interrupted operation:\n%s", out)
	}
}

// TestS6SignalStopsAtSafePoint stops an upgrade with SIGINT while its pre-upgrade hook runs: berth stops, marks
// the journal interrupted, gives the lease back and exits non-zero saying how to go on; recover
// --rollback then rolls the upgrade back.
func TestS6SignalStopsAtSafePoint(t *testing.T) {
	env := testenv.New(t)
	ch := crashChart(t)
	mustBerth(t, env, "install", "sig", ch)
	bin, err := berthtest.BerthBinary()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"upgrade", "sig", ch, "--set", "version=2", "--set", "hookRun=1h"}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", env.Kubeconfig, "-n", env.Namespace)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the hook Job exists, then interrupt.
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := env.Client.BatchV1().Jobs(env.Namespace).Get(ctx, "sig-hook-pre-upgrade", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the pre-upgrade hook Job did not appear: %v", err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	if err == nil || cmd.ProcessState.ExitCode() != 130 {
		t.Fatalf("interrupted upgrade: %v (exit code %d), want exit code 130\n%s", err, cmd.ProcessState.ExitCode(), out.String())
	}
	if !strings.Contains(out.String(), "berth recover sig") {
		t.Errorf("the interrupted upgrade does not say how to go on:\n%s", out.String())
	}
	j, err := release.NewJournals(env.Client.CoreV1(), env.Namespace).Get(t.Context(), "sig")
	if err != nil || j == nil || j.State != release.JournalInterrupted {
		t.Errorf("journal after the signal: %+v (%v), want interrupted", j, err)
	}
	if h, _, err := release.NewLeases(env.Client.CoordinationV1(), env.Namespace).Holder(t.Context(), "sig"); err != nil || h != nil {
		t.Errorf("lease after the signal: %+v (%v), want released", h, err)
	}
	// Its hook would run for an hour: roll the upgrade back instead of finishing it.
	mustBerth(t, env, "recover", "sig", "--rollback")
	if got, problems := state(t.Context(), env, "sig"); got != "1" || len(problems) > 0 {
		t.Errorf("after recover --rollback: chart version %q (want 1), problems: %v", got, problems)
	}
}
