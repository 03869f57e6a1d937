package lifecycle_test

import (
	"testing"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
)

// TestOperationReadsJournalFromRecordsList: an install and an upgrade, holding the release's
// lease, read its journal from the list of its records, not with a request of its own; an
// interrupted operation's journal left before is read all the same, and finished.
func TestOperationReadsJournalFromRecordsList(t *testing.T) {
	env := testenv.New(t)
	d, _ := secretDeps(t, env, "berth install web")
	ch, err := chart.Load(writeChart(t, map[string]string{
		"Chart.yaml":            "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {n: {{ .Values.n | default 0 | quote }}}\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	journalReads := func(mark testenv.AuditMark) int {
		n := 0
		for _, ev := range env.AuditEvents(t, mark) {
			if ev.Resource == "secrets" && ev.Verb == "get" && ev.Name == release.JournalKey("web") {
				n++
			}
		}
		return n
	}

	mark := env.AuditMark(t)
	if _, err := lifecycle.Install(ctx, d, lifecycle.InstallOptions{Name: "web", Namespace: env.Namespace, Chart: ch}); err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.Upgrade(ctx, d, lifecycle.UpgradeOptions{Name: "web", Namespace: env.Namespace, Chart: ch,
		Values: map[string]any{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	if n := journalReads(mark); n != 0 {
		t.Errorf("an install and an upgrade read the journal with %d requests of its own, want none", n)
	}

	// A journal left by an operation that did not end, after its last revision: the list under
	// the next operation's lease holds it, and the operation deletes it.
	records := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	last, err := records.Last(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := release.NewJournals(env.Client.CoreV1(), env.Namespace).Put(ctx, &release.Journal{Release: "web",
		Operation: release.OpUpgrade, Revision: last.Version, State: release.JournalRunning}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.Upgrade(ctx, d, lifecycle.UpgradeOptions{Name: "web", Namespace: env.Namespace, Chart: ch,
		Values: map[string]any{"n": 2}}); err != nil {
		t.Fatal(err)
	}
	if j, err := release.NewJournals(env.Client.CoreV1(), env.Namespace).Get(ctx, "web"); err != nil || j != nil {
		t.Errorf("journal after the upgrade: %+v (%v), want the one left deleted", j, err)
	}
	if last, err := records.Last(ctx, "web"); err != nil || last.Version != 3 || last.Info.Status != release.StatusDeployed {
		t.Errorf("last revision after the upgrade: %v (%v), want revision 3 deployed", last, err)
	}
}
