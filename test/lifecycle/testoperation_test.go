package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/cli"
	berthlifecycle "github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// testedChart has a test that succeeds at once and, when values ask, a test whose Pod never ends
// and a pre-upgrade hook whose Pod never ends.
var testedChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: tested\nversion: 0.1.0\n",
	"values.yaml": "hangUpgrade: false\nhangTest: false\n",
	"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {upgraded: "{{ .Values.hangUpgrade }}"}
`,
	"templates/hooks.yaml": `{{- define "pod" }}
apiVersion: v1
kind: Pod
metadata:
  name: {{ .name }}
  annotations:
    helm.sh/hook: {{ .event }}
    helm.sh/hook-weight: "{{ .weight }}"
    helm.sh/hook-delete-policy: before-hook-creation
    devcluster.berth.dev/outcome: {{ .outcome }}
    devcluster.berth.dev/run: 0s
spec:
  restartPolicy: Never
  containers: [{name: run, image: example.invalid/run}]
{{- end }}
{{- include "pod" (dict "name" "quick-test" "event" "test" "weight" 0 "outcome" "succeed") }}
{{- if .Values.hangTest }}
---
{{- include "pod" (dict "name" "slow-test" "event" "test" "weight" 1 "outcome" "hang") }}
{{- end }}
{{- if .Values.hangUpgrade }}
---
{{- include "pod" (dict "name" "before-upgrade" "event" "pre-upgrade" "weight" 0 "outcome" "hang") }}
{{- end }}
`,
}

// background runs berth against the test's cluster in its own goroutine until it ends or cancel
// is called (as a signal would stop it); done yields its error once. The test waits for it before
// it ends.
func background(t *testing.T, env *testenv.Env, args ...string) (done <-chan error, stderr *berthtest.LockedBuffer, cancel context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ch := make(chan error, 1)
	stderr = &berthtest.LockedBuffer{}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		var out bytes.Buffer
		ch <- cli.Run(ctx, cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: stderr},
			append(args, "--kubeconfig", env.Kubeconfig, "-n", env.Namespace))
	}()
	t.Cleanup(func() {
		cancel()
		<-ended
	})
	return ch, stderr, cancel
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, cond); err != nil {
		t.Fatalf("waiting until %s: %v", what, err)
	}
}

// leaseHeld waits until a live berth holds the release's lease.
func leaseHeld(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	leases := release.NewLeases(env.Client.CoordinationV1(), env.Namespace)
	waitFor(t, "the lease of "+name+" is held", func(ctx context.Context) (bool, error) {
		_, live, err := leases.Holder(ctx, name)
		return live, err
	})
}

// podExists waits until the Pod exists.
func podExists(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	waitFor(t, "Pod "+name+" exists", func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// assertNoJournal fails the test when the release has a journal.
func assertNoJournal(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	j, _, err := release.NewJournals(env.Client.CoreV1(), env.Namespace).Read(t.Context(), name)
	if err != nil || j != nil {
		t.Errorf("release %s has a journal left: %+v (%v)", name, j, err)
	}
}

// TestTestHoldsTheLease: berth test is an operation. While an upgrade holds the release (in a
// pre-upgrade hook that never ends), berth test refuses naming the upgrade; with --wait-for-lock
// it gives up at its deadline naming the upgrade, or, given the time, runs the tests once the
// upgrade ended, records their last runs and leaves no journal.
func TestTestHoldsTheLease(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "tested", testedChart)
	berthtest.MustBerth(t, env, "install", "tested", chart)

	upgrade, upgradeErr, _ := background(t, env, "upgrade", "tested", chart, "--set", "hangUpgrade=true")
	leaseHeld(t, env, "tested")

	_, stderr, err := berthtest.Berth(t, env, "test", "tested")
	if err == nil || !strings.Contains(err.Error(), "is being changed by") || !strings.Contains(err.Error(), "berth upgrade tested") {
		t.Fatalf("berth test while an upgrade runs = %v, want a refusal naming the upgrade\n%s", err, stderr)
	}
	if !strings.Contains(err.Error(), "--wait-for-lock") {
		t.Errorf("the refusal does not say how to wait: %v", err)
	}

	_, stderr, err = berthtest.Berth(t, env, "test", "tested", "--wait-for-lock", "--timeout", "3s")
	if err == nil || !strings.Contains(err.Error(), "gave up waiting") || !strings.Contains(err.Error(), "berth upgrade tested") {
		t.Fatalf("berth test --wait-for-lock --timeout 3s while an upgrade runs = %v, want it to give up naming the upgrade\n%s", err, stderr)
	}
	if got := berthtest.RecordedHook(t, berthtest.LastRecord(t, env, "tested"), "quick-test").LastRun.Phase; got != "" {
		t.Errorf("a test refused the release ran: quick-test recorded as %q", got)
	}

	tested, testErr, _ := background(t, env, "test", "tested", "--wait-for-lock", "--timeout", "2m")
	// The upgrade ends once its hook is gone; the waiting test then takes the release.
	podExists(t, env, "before-upgrade")
	if err := env.Client.CoreV1().Pods(env.Namespace).Delete(t.Context(), "before-upgrade", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-upgrade; err == nil {
		t.Errorf("the upgrade whose hook was deleted succeeded:\n%s", upgradeErr)
	}
	if err := <-tested; err != nil {
		t.Fatalf("berth test --wait-for-lock: %v\n%s", err, testErr)
	}
	if !strings.Contains(testErr.String(), "hooks/test") || !strings.Contains(testErr.String(), "record/tested/2") {
		t.Errorf("berth test's progress does not show its plan's steps:\n%s", testErr)
	}
	rel := berthtest.LastRecord(t, env, "tested")
	if got := berthtest.RecordedHook(t, rel, "quick-test").LastRun.Phase; rel.Version != 2 || got != releasev1.HookPhaseSucceeded {
		t.Errorf("revision %d records quick-test as %q, want revision 2 with it succeeded", rel.Version, got)
	}
	assertNoJournal(t, env, "tested")
}

// TestTestIsJournaled: a test run journals its plan (the tests, then their record) while it
// runs. Stopped by a signal in a test that never ends, it says so, records the tests' last runs
// by a step of a plan of their own and leaves its journal marked interrupted; the next test run deletes that journal, runs, and
// leaves none.
func TestTestIsJournaled(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "tested", testedChart)
	berthtest.MustBerth(t, env, "install", "tested", chart, "--set", "hangTest=true")

	journals := release.NewJournals(env.Client.CoreV1(), env.Namespace)
	tested, stderr, stop := background(t, env, "test", "tested")
	podExists(t, env, "slow-test")
	j, _, err := journals.Read(t.Context(), "tested")
	if err != nil || j == nil {
		t.Fatalf("no journal while the tests run: %v", err)
	}
	var steps []string
	for _, s := range j.Plan.Steps {
		steps = append(steps, s.ID)
	}
	if got, want := strings.Join(steps, " "), "hooks/test record/tested/1"; j.Operation != "test" || j.Revision != 1 || got != want {
		t.Errorf("journal of %s of revision %d with plan %q, want test of revision 1 with plan %q", j.Operation, j.Revision, got, want)
	}
	if !strings.Contains(j.Holder, "berth test tested") {
		t.Errorf("the journal names %q, not the test run", j.Holder)
	}

	stop()
	if err := <-tested; !errors.Is(err, berthlifecycle.ErrInterrupted) {
		t.Fatalf("berth test stopped by a signal = %v, want it interrupted\n%s", err, stderr)
	}
	if !strings.Contains(stderr.String(), "record/tested/1") {
		t.Errorf("no step records the tests' last runs after the signal:\n%s", stderr)
	}
	rel := berthtest.LastRecord(t, env, "tested")
	for name, want := range map[string]releasev1.HookPhase{"quick-test": releasev1.HookPhaseSucceeded, "slow-test": releasev1.HookPhaseUnknown} {
		if got := berthtest.RecordedHook(t, rel, name).LastRun.Phase; got != want {
			t.Errorf("after the signal, %s is recorded as %q, want %q", name, got, want)
		}
	}
	if j, _, err := journals.Read(t.Context(), "tested"); err != nil || j == nil || j.State != release.JournalInterrupted {
		t.Fatalf("after the signal, the journal is %+v (%v), want it marked interrupted", j, err)
	}

	_, progress := berthtest.MustBerth(t, env, "test", "tested", "--filter", "!name=slow-test")
	if !strings.Contains(progress, "test journal left after the test ended") {
		t.Errorf("the next test run does not say it found the journal left behind:\n%s", progress)
	}
	assertNoJournal(t, env, "tested")
	if got := berthtest.RecordedHook(t, berthtest.LastRecord(t, env, "tested"), "quick-test").LastRun.Phase; got != releasev1.HookPhaseSucceeded {
		t.Errorf("quick-test recorded as %q after the next run, want it succeeded", got)
	}
}
