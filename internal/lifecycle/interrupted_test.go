package lifecycle

import (
	"context"
	"math/rand/v2"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/internal/release"
)

// journalOf is a JournalReader that holds one journal.
type journalOf struct{ j *release.Journal }

func (r journalOf) Get(context.Context, string) (*release.Journal, error) { return r.j, nil }

// TestFindInterruptedIncompleteRecord: a revision whose record object was written and not all
// its parts (an operation killed while it wrote them) is the operation interrupted, with that
// revision incomplete and the newest complete one as Last; a journal left by an earlier operation,
// or the operation's own written beside the record, goes with it.
func TestFindInterruptedIncompleteRecord(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	store := release.NewSecretStore(client.CoreV1(), "ns")
	rel := func(version int, status release.Status, files []*common.File) *release.Release {
		return &release.Release{Name: "r", Namespace: "ns", Version: version, Info: &release.Info{Status: status},
			Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Name: "c", Version: "1.0.0"}, Files: files}}
	}
	if in, err := findInterrupted(ctx, store, nil, "r"); err != nil || in != nil {
		t.Fatalf("no record: %+v, %v; want nothing interrupted", in, err)
	}
	if err := store.Create(ctx, rel(1, release.StatusDeployed, nil)); err != nil {
		t.Fatal(err)
	}
	// Three MiB of random bytes: the record's files go to three parts.
	blob := make([]byte, 3<<20)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range blob {
		blob[i] = byte(rnd.Uint32())
	}
	if err := store.Create(ctx, rel(2, release.StatusPendingUpgrade, []*common.File{{Name: "files/blob", Data: blob}})); err != nil {
		t.Fatal(err)
	}
	secrets := client.CoreV1().Secrets("ns")
	parts, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: "owner=berth,version=2"})
	if err != nil || len(parts.Items) < 2 {
		t.Fatalf("parts of revision 2: %d (%v), want several", len(parts.Items), err)
	}
	if err := secrets.Delete(ctx, parts.Items[1].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	stale := &release.Journal{Release: "r", Operation: release.OpUpgrade, Revision: 1, State: release.JournalRunning}
	// The upgrade's own journal, written beside the record (session.writeAhead).
	ahead := &release.Journal{Release: "r", Operation: release.OpUpgrade, Revision: 2, State: release.JournalRunning,
		Steps: []string{"record/pending"}}
	for name, journals := range map[string]JournalReader{"no journal": nil, "an earlier operation's journal": journalOf{stale},
		"its own journal, written beside the record": journalOf{ahead}} {
		t.Run(name, func(t *testing.T) {
			in, err := findInterrupted(ctx, store, journals, "r")
			if err != nil {
				t.Fatal(err)
			}
			if in == nil || in.Incomplete != 2 || in.Operation != release.OpUpgrade || in.Stale || in.Journal != nil ||
				in.Last == nil || in.Last.Version != 1 || in.Deployed != 1 {
				t.Fatalf("interrupted: %+v, want the upgrade of revision 2, incomplete, after revision 1 deployed, no journal to resume", in)
			}
			if got := (State{Last: in.Last, Interrupted: in}).Status(); got != StatusInterruptedUpgrade {
				t.Errorf("status %s, want %s", got, StatusInterruptedUpgrade)
			}
			for _, rollback := range []bool{false, true} {
				if got, want := in.Next(rollback), "delete the incomplete record of revision 2; nothing else had changed: the release stays at revision 1"; got != want {
					t.Errorf("Next(%v) = %q, want %q", rollback, got, want)
				}
			}
		})
	}
}

// TestFindInterruptedJournalAhead: the journal of an install, upgrade or rollback is written beside
// the record of its new revision (session.writeAhead). An operation killed before that record was
// written left its journal and nothing else: the journal is stale, and recovering deletes it. (One
// killed while the record's parts were written: TestFindInterruptedIncompleteRecord.)
func TestFindInterruptedJournalAhead(t *testing.T) {
	ctx := t.Context()
	rel := func(version int, status release.Status) *release.Release {
		return &release.Release{Name: "r", Namespace: "ns", Version: version, Info: &release.Info{Status: status},
			Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Name: "c", Version: "1.0.0"}}}
	}
	for _, tc := range []struct {
		name     string
		op       release.Operation
		revision int
		records  []*release.Release
	}{
		{"install", release.OpInstall, 1, nil},
		{"upgrade", release.OpUpgrade, 2, []*release.Release{rel(1, release.StatusDeployed)}},
		{"rollback", release.OpRollback, 3, []*release.Release{rel(1, release.StatusSuperseded), rel(2, release.StatusDeployed)}},
		{"install replacing an uninstalled release", release.OpInstall, 2, []*release.Release{rel(1, release.StatusUninstalled)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := release.NewSecretStore(fake.NewClientset().CoreV1(), "ns")
			for _, r := range tc.records {
				if err := store.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			j := &release.Journal{Release: "r", Operation: tc.op, Revision: tc.revision, State: release.JournalRunning,
				Steps: []string{"record/pending"}}
			in, err := findInterrupted(ctx, store, journalOf{j}, "r")
			if err != nil {
				t.Fatal(err)
			}
			if in == nil || !in.Stale || in.Incomplete != 0 {
				t.Fatalf("interrupted: %+v, want the journal stale, nothing else to finish", in)
			}
			if got, want := in.Next(false), "delete the journal"; got != want {
				t.Errorf("Next = %q, want %q", got, want)
			}
		})
	}
}
