package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
)

// refusingStore is a memory store whose creates of a record are refused.
type refusingStore struct {
	release.Store
	err error
}

func (s refusingStore) Create(context.Context, *release.Release) error { return s.err }

// TestJournalAheadOfARefusedRecord: an install writes its journal beside its pending record; when
// the record is refused, the install fails naming it, having changed no object, and deletes the
// journal it wrote, leaving nothing for a later operation to find.
func TestJournalAheadOfARefusedRecord(t *testing.T) {
	ctx := t.Context()
	ch, err := chart.Load(filepath.Join("..", "chart", "testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("record refused")
	journals := &memoryJournals{}
	c := newFakeCluster()
	d := lifecycle.Deps{
		Cluster: c, Store: refusingStore{Store: release.NewMemoryStore("team"), err: refused}, Namespaces: fakeNamespaces{},
		Journals: journals, Holder: release.Holder{Identity: "test"},
	}
	_, err = lifecycle.Install(ctx, d, lifecycle.InstallOptions{Name: "web", Namespace: "team", Chart: ch,
		WaitOptions: lifecycle.WaitOptions{Wait: true, Timeout: time.Minute}})
	var re *lifecycle.RecordError
	if !errors.Is(err, refused) || !errors.As(err, &re) || re.Status != release.StatusPendingInstall {
		t.Fatalf("install whose record is refused: %v; want the pending record's error", err)
	}
	if len(c.objects) != 0 {
		t.Errorf("objects applied before the record was written: %d", len(c.objects))
	}
	if j, _ := journals.Get(ctx, "web"); j != nil {
		t.Errorf("journal left: %+v", j)
	}
	if journals.writes != 1 {
		t.Errorf("journal writes: %d, want the one written beside the record", journals.writes)
	}
}

// TestUpgradeRecordRequests: an upgrade under its lease makes these requests on Secrets, each
// time: one list of the release's records (which holds its journal, and which the history's
// prune reads again from memory), the journal's create and delete, the pending record's create,
// and the superseded and deployed records' updates. The journal goes out once the prune has
// read the list: a journal written forgets the journal the list holds, and a list read after
// that would be asked of the API server again.
func TestUpgradeRecordRequests(t *testing.T) {
	env := testenv.New(t)
	d := leasedDeps(t, env)
	ch, err := chart.Load(writeChart(t, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {generation: {{ .Values.generation | default 1 | quote }}}
`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := lifecycle.Install(ctx, d, lifecycle.InstallOptions{Name: "web", Namespace: env.Namespace, Chart: ch}); err != nil {
		t.Fatal(err)
	}
	for generation := 2; generation <= 4; generation++ {
		mark := env.AuditMark(t)
		if _, err := lifecycle.Upgrade(ctx, d, lifecycle.UpgradeOptions{Name: "web", Namespace: env.Namespace, Chart: ch,
			Values: map[string]any{"generation": generation}, HistoryMax: 10}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range env.AuditEvents(t, mark) {
			if ev.Resource == "secrets" {
				got = append(got, ev.Verb+" "+ev.Name)
			}
		}
		slices.Sort(got)
		want := []string{"create berth.journal.web", fmt.Sprintf("create sh.helm.release.v1.web.v%d", generation), "delete berth.journal.web", "list ",
			fmt.Sprintf("update sh.helm.release.v1.web.v%d", generation-1), fmt.Sprintf("update sh.helm.release.v1.web.v%d", generation)}
		if !slices.Equal(got, want) {
			t.Errorf("upgrade to revision %d, requests on Secrets: %q, want %q", generation, got, want)
		}
	}
}
