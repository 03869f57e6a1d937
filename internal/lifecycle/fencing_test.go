package lifecycle_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
)

// TestOperationThatLostItsLeaseWritesNothing takes the lease of an upgrade over while its
// pre-upgrade hook runs, as another operation that judged it expired would, and writes what that
// new holder writes: the upgrade stops, and neither records its failure nor rolls back (it was
// asked to on failure), nor overwrites or deletes the new holder's journal, nor its lease.
func TestOperationThatLostItsLeaseWritesNothing(t *testing.T) {
	env := testenv.New(t)
	d := leasedDeps(t, env)
	ch, err := chart.Load(writeChart(t, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"values.yaml": "hookRun: 0s\n",
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {hookRun: {{ .Values.hookRun | quote }}}
`,
		"templates/hook.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: web-hook
  annotations: {helm.sh/hook: pre-upgrade, helm.sh/hook-delete-policy: before-hook-creation}
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {devcluster.berth.dev/run: {{ .Values.hookRun | quote }}}}
    spec:
      restartPolicy: Never
      containers: [{name: hook, image: example.invalid/hook}]
`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := lifecycle.Install(ctx, d, lifecycle.InstallOptions{Name: "web", Namespace: env.Namespace, Chart: ch}); err != nil {
		t.Fatal(err)
	}

	upgraded := make(chan error, 1)
	go func() {
		_, err := lifecycle.Upgrade(ctx, d, lifecycle.UpgradeOptions{Name: "web", Namespace: env.Namespace, Chart: ch,
			Values: map[string]any{"hookRun": "1h"}, RollbackOnFailure: true, WaitOptions: lifecycle.WaitOptions{Timeout: 2 * time.Minute}})
		upgraded <- err
	}()
	waitUntil(t, "the pre-upgrade hook runs", func(ctx context.Context) (bool, error) {
		_, err := env.Client.BatchV1().Jobs(env.Namespace).Get(ctx, "web-hook", metav1.GetOptions{})
		return err == nil, nil
	})

	left := takeOver(t, env, "web")

	var err2 error
	select {
	case err2 = <-upgraded:
	case <-time.After(time.Minute):
		t.Fatal("the upgrade went on for a minute after its lease was taken over")
	}
	var fe *lifecycle.FailedError
	if !errors.Is(err2, release.ErrLost) || !errors.As(err2, &fe) || fe.Lost == nil || fe.Undo {
		t.Errorf("upgrade whose lease was taken over: %v; want a failure that lost the release, not undone", err2)
	}
	store := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	history, err := store.History(ctx, "web")
	if err != nil || len(history) != 2 {
		t.Fatalf("history of %d revisions (%v), want 2: no rollback made a third", len(history), err)
	}
	if rev := history[1]; rev.Info.Status != release.StatusPendingUpgrade || rev.Info.Description != left.description {
		t.Errorf("revision 2 is %s (%q), want as the new holder left it: %s (%q)", rev.Info.Status, rev.Info.Description,
			release.StatusPendingUpgrade, left.description)
	}
	if rev := history[0]; rev.Info.Status != release.StatusDeployed {
		t.Errorf("revision 1 is %s, want deployed still", rev.Info.Status)
	}
	j, version, err := release.NewJournals(env.Client.CoreV1(), env.Namespace).Read(ctx, "web")
	if err != nil || j == nil || j.Holder != left.holder || version != left.journal {
		t.Errorf("journal after the upgrade: %+v at version %q (%v), want the new holder's at %q", j, version, err, left.journal)
	}
	h, _, err := release.NewLeases(env.Client.CoordinationV1(), env.Namespace).Holder(ctx, "web")
	if err != nil || h == nil || h.Identity != left.holder {
		t.Errorf("lease after the upgrade: %+v (%v), want the new holder's", h, err)
	}
}

// leasedDeps are the collaborators of operations in env's namespace, with leases that are
// renewed every second, so that an operation notices within a second that it lost one.
func leasedDeps(t *testing.T, env *testenv.Env) lifecycle.Deps {
	t.Helper()
	d, clients := secretDeps(t, env, "berth upgrade web")
	leases := release.NewLeases(clients.Client.CoordinationV1(), env.Namespace)
	leases.Duration = 3 * time.Second
	d.Leases = leases
	return d
}

// secretDeps are the collaborators of operations in env's namespace, run by command, with its
// records in Secrets, and the clients they are made with.
func secretDeps(t *testing.T, env *testenv.Env, command string) (lifecycle.Deps, *kube.Clients) {
	t.Helper()
	clients, err := kube.NewClients(env.Config, env.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	store, err := release.Open(release.DriverSecret, clients.Client, clients.Namespace, release.DefaultExpansion(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return lifecycle.NewDeps(clients, store, release.Self(command), nil), clients
}

// newHolder is what the operation that took a release over left.
type newHolder struct {
	holder, description string
	// journal is the version of its journal.
	journal string
}

// takeOver makes release name another operation's: its Lease names another holder, its last
// revision's description and its journal are that holder's.
func takeOver(t *testing.T, env *testenv.Env, name string) newHolder {
	t.Helper()
	ctx := t.Context()
	left := newHolder{holder: "elsewhere/1/new", description: "finished by the operation that took the release over"}
	leases := env.Client.CoordinationV1().Leases(env.Namespace)
	lease, err := leases.Get(ctx, release.LeaseKey(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	lease.Spec.HolderIdentity, lease.Spec.AcquireTime, lease.Spec.RenewTime = &left.holder, &now, &now
	lease.Annotations[release.LeaseHostAnnotation] = "elsewhere"
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("take the lease over: %v", err)
	}
	store := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	last, err := store.Last(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	last.Info.Description = left.description
	if err := store.Update(ctx, last); err != nil {
		t.Fatal(err)
	}
	journals := release.NewJournals(env.Client.CoreV1(), env.Namespace)
	j, version, err := journals.Read(ctx, name)
	if err != nil || j == nil {
		t.Fatalf("the upgrade's journal: %+v (%v)", j, err)
	}
	j.Holder = left.holder
	if left.journal, err = journals.Put(ctx, j, version); err != nil {
		t.Fatal(err)
	}
	return left
}

// waitUntil waits until cond holds.
func waitUntil(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, cond); err != nil {
		t.Fatalf("wait until %s: %v", what, err)
	}
}

// writeChart writes a chart of files, by path, into a new directory and returns its path.
func writeChart(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for path, content := range files {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
