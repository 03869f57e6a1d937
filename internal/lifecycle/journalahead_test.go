package lifecycle_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
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
