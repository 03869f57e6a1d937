package release

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/berthdev/berth/internal/testenv"
)

// secretRequests are the requests on Secrets made since mark, as "verb name" ("list" alone).
func secretRequests(t *testing.T, env *testenv.Env, mark testenv.AuditMark) []string {
	t.Helper()
	var out []string
	for _, ev := range env.AuditEvents(t, mark) {
		if ev.Resource == "secrets" {
			out = append(out, ev.Verb+" "+ev.Name)
		}
	}
	return out
}

// readJournal reads the journal of release name through js and checks it is the one at version
// of revision want (0: none).
func readJournal(t *testing.T, js *Journals, name string, want int, version string) {
	t.Helper()
	j, read, err := js.Read(t.Context(), name)
	switch {
	case err != nil:
		t.Fatalf("read the journal of %s: %v", name, err)
	case want == 0 && (j != nil || read != ""):
		t.Fatalf("read the journal of %s: revision %d at version %q, want none", name, j.Revision, read)
	case want != 0 && (j == nil || j.Revision != want || read != version):
		t.Fatalf("read the journal of %s: %+v at version %q, want revision %d at version %q", name, j, read, want, version)
	}
}

// TestJournalReadFromRecordsList: while a store remembers, a journal read after the list of its
// release's records is answered from that list, with the version a read would have had, and
// makes no request: whether the release has a journal or not. The list's records are the
// release's records alone, not its journal, nor a Secret of a chart labelled with its name.
func TestJournalReadFromRecordsList(t *testing.T) {
	env := testenv.New(t)
	ctx := t.Context()
	core := env.Client.CoreV1()
	s := NewSecretStore(core, env.Namespace)
	js := NewJournals(core, env.Namespace).Beside(s)
	other := NewJournals(core, env.Namespace)
	for _, name := range []string{"web", "api"} {
		if err := s.Create(ctx, rev(env.Namespace, name, 1, StatusDeployed)); err != nil {
			t.Fatal(err)
		}
	}
	// A chart's Secret labelled with the release's name, and one with Helm's owner label but
	// not a record's type, are not the journal.
	for _, sec := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "web-settings", Labels: map[string]string{"name": "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-berth", Labels: map[string]string{"name": "web", "owner": "berth"}}},
	} {
		if _, err := core.Secrets(env.Namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	version, err := other.Put(ctx, &Journal{Release: "web", Operation: OpUpgrade, Revision: 2, State: JournalRunning}, "")
	if err != nil {
		t.Fatal(err)
	}

	forget := s.RememberLists()
	defer forget()
	mark := env.AuditMark(t)
	for _, name := range []string{"web", "api"} {
		if last, err := s.Last(ctx, name); err != nil || last.Version != 1 {
			t.Fatalf("last revision of %s: %v, %v", name, last, err)
		}
	}
	readJournal(t, js, "web", 2, version)
	readJournal(t, js, "api", 0, "")
	if got := secretRequests(t, env, mark); len(got) != 2 || got[0] != "list " || got[1] != "list " {
		t.Errorf("requests of two lists and two journal reads: %q, want the two lists alone", got)
	}
	h, err := s.History(ctx, "web")
	if err != nil || len(h) != 1 || h[0].Version != 1 {
		t.Fatalf("history of web: %v, %v; want revision 1 alone", versions(h), err)
	}

	// A list made while nothing is remembered, or journals not beside the store, read.
	forget()
	mark = env.AuditMark(t)
	if _, err := s.Last(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	readJournal(t, js, "web", 2, version)
	forget = s.RememberLists()
	defer forget()
	if _, err := s.Last(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	readJournal(t, other, "web", 2, version)
	if got := secretRequests(t, env, mark); fmt.Sprint(got) != fmt.Sprint([]string{"list ", "get " + JournalKey("web"), "list ", "get " + JournalKey("web")}) {
		t.Errorf("requests: %q, want each journal read to get it", got)
	}

	// Purging the release deletes its records, not its journal nor the chart's Secrets.
	if _, err := s.Purge(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{JournalKey("web"), "web-settings", "web-berth"} {
		if _, err := core.Secrets(env.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("Secret %s after the release was purged: %v", name, err)
		}
	}
}

// TestJournalBesideRecordsForgets: what the list of a release's records said of its journal is
// forgotten, and the journal read again, once the store or the journals beside it write, and once
// the store stops remembering: a journal another writer wrote after the list is then seen. The
// journals' conditional writes refuse what the list hid.
func TestJournalBesideRecordsForgets(t *testing.T) {
	env := testenv.New(t)
	ctx := t.Context()
	core := env.Client.CoreV1()
	s := NewSecretStore(core, env.Namespace)
	js := NewJournals(core, env.Namespace).Beside(s)
	other := NewJournals(core, env.Namespace)
	if err := s.Create(ctx, rev(env.Namespace, "web", 1, StatusDeployed)); err != nil {
		t.Fatal(err)
	}
	forget := s.RememberLists()
	defer forget()
	list := func() {
		t.Helper()
		if _, err := s.Last(ctx, "web"); err != nil {
			t.Fatal(err)
		}
	}

	// Another writer's journal, created after the list: the list says there is none, and a
	// journal created on what the list said is refused.
	list()
	v1, err := other.Put(ctx, &Journal{Release: "web", Operation: OpUpgrade, Revision: 2, State: JournalRunning}, "")
	if err != nil {
		t.Fatal(err)
	}
	readJournal(t, js, "web", 0, "")
	_, err = js.Put(ctx, &Journal{Release: "web", Operation: OpUpgrade, Revision: 2}, "")
	if changed := new(JournalChangedError); !errors.As(err, &changed) {
		t.Fatalf("a journal created over another's: %v, want a JournalChangedError", err)
	}
	// That write, refused, forgot the list: the journal is read.
	readJournal(t, js, "web", 2, v1)

	// A write of the store's changes its records in the list, not the journal listed with them.
	list()
	v2, err := other.Put(ctx, &Journal{Release: "web", Operation: OpUpgrade, Revision: 2, State: JournalInterrupted}, v1)
	if err != nil {
		t.Fatal(err)
	}
	readJournal(t, js, "web", 2, v1) // as the list said
	if err := s.Update(ctx, rev(env.Namespace, "web", 1, StatusDeployed)); err != nil {
		t.Fatal(err)
	}
	readJournal(t, js, "web", 2, v1)
	list()
	readJournal(t, js, "web", 2, v1) // the list is kept

	// A write of the journals' forgets it, and what they wrote is read back.
	v3, err := js.Put(ctx, &Journal{Release: "web", Operation: OpUpgrade, Revision: 2, State: JournalRunning}, v2)
	if err != nil {
		t.Fatal(err)
	}
	readJournal(t, js, "web", 2, v3)
	list()
	readJournal(t, js, "web", 2, v3)
	if err := js.Delete(ctx, "web", v3); err != nil {
		t.Fatal(err)
	}
	readJournal(t, js, "web", 0, "")

	// Another writer's journal after the list is seen once the store stops remembering.
	list()
	v4, err := other.Put(ctx, &Journal{Release: "web", Operation: OpRollback, Revision: 3, State: JournalRunning}, "")
	if err != nil {
		t.Fatal(err)
	}
	readJournal(t, js, "web", 0, "")
	forget()
	readJournal(t, js, "web", 3, v4)
	list()
	readJournal(t, js, "web", 3, v4)
}

// TestJournalBesideLargeJournal: a journal large enough to be kept gzipped reads from the list
// as it does from its Secret.
func TestJournalBesideLargeJournal(t *testing.T) {
	env := testenv.New(t)
	ctx := t.Context()
	core := env.Client.CoreV1()
	s := NewSecretStore(core, env.Namespace)
	js := NewJournals(core, env.Namespace).Beside(s)
	j := &Journal{Release: "web", Operation: OpInstall, Revision: 1, State: JournalRunning}
	for i := range 20000 {
		j.Steps = append(j.Steps, fmt.Sprintf("apply/ConfigMap/web-%08d", i))
	}
	version, err := js.Put(ctx, j, "")
	if err != nil {
		t.Fatal(err)
	}
	sec, err := core.Secrets(env.Namespace).Get(ctx, JournalKey("web"), metav1.GetOptions{})
	if err != nil || sec.Data[journalGzipKey] == nil {
		t.Fatalf("the journal's Secret: %v; want it gzipped", err)
	}
	defer s.RememberLists()()
	if _, err := s.Last(ctx, "web"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("last revision: %v, want none", err)
	}
	mark := env.AuditMark(t)
	got, read, err := js.Read(ctx, "web")
	if err != nil || read != version || len(got.Steps) != len(j.Steps) || got.Steps[len(j.Steps)-1] != j.Steps[len(j.Steps)-1] {
		t.Fatalf("read: %d steps at version %q (%v), want %d at %q", len(got.Steps), read, err, len(j.Steps), version)
	}
	if got := secretRequests(t, env, mark); len(got) != 0 {
		t.Errorf("requests of a journal read after the list: %q, want none", got)
	}
}

// TestJournalsBesideOtherStores: journals are read from the lists of a store of Secrets through
// their own client alone: not from a store of ConfigMaps, nor one of memory, nor one through
// another client.
func TestJournalsBesideOtherStores(t *testing.T) {
	cs := fake.NewClientset()
	core := cs.CoreV1()
	js := NewJournals(core, "ns")
	for name, s := range map[string]*HelmStore{
		"ConfigMaps":   NewConfigMapStore(core, "ns"),
		"memory":       NewMemoryStore("ns"),
		"other client": NewSecretStore(fake.NewClientset().CoreV1(), "ns"),
	} {
		if got := js.Beside(s); got.lists != nil {
			t.Errorf("journals beside a store of %s read from its lists", name)
		}
	}
	if js.Beside(NewSecretStore(core, "ns")).lists == nil {
		t.Error("journals beside a store of Secrets through their client do not read from its lists")
	}
}

// writingSecrets are Secrets whose lists run during once, after they read the Secrets and
// before they answer.
type writingSecrets struct {
	typedcorev1.SecretsGetter
	during func()
}

func (w *writingSecrets) Secrets(namespace string) typedcorev1.SecretInterface {
	return writingSecretsIn{SecretInterface: w.SecretsGetter.Secrets(namespace), w: w}
}

type writingSecretsIn struct {
	typedcorev1.SecretInterface
	w *writingSecrets
}

func (c writingSecretsIn) List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	l, err := c.SecretInterface.List(ctx, opts)
	if during := c.w.during; during != nil {
		c.w.during = nil
		during()
	}
	return l, err
}

// TestJournalWriteDuringList: a list of a release's records under way while its journal is
// written is not kept: it may hold the journal as it was before the write.
func TestJournalWriteDuringList(t *testing.T) {
	core := &writingSecrets{SecretsGetter: fake.NewClientset().CoreV1()}
	s := NewSecretStore(core, "ns")
	js := NewJournals(core, "ns").Beside(s)
	ctx := t.Context()
	if err := s.Create(ctx, rev("ns", "web", 1, StatusDeployed)); err != nil {
		t.Fatal(err)
	}
	defer s.RememberLists()()
	written := false
	core.during = func() {
		if _, err := js.Put(ctx, &Journal{Release: "web", Operation: OpUpgrade, Revision: 2}, ""); err != nil {
			t.Error(err)
		}
		written = true
	}
	if _, err := s.Last(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if !written {
		t.Fatal("no journal written while the records were listed")
	}
	if j, _, err := js.Read(ctx, "web"); err != nil || j == nil {
		t.Fatalf("read after the write: %+v, %v; want the journal written", j, err)
	}
}
