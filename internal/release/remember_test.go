package release

import (
	"errors"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

// TestRememberLists: while a store remembers, a list it made is answered again without a
// request until it writes, and a write's effect is read; after forget, every read lists.
func TestRememberLists(t *testing.T) {
	cs := fake.NewClientset()
	s := NewSecretStore(cs.CoreV1(), "ns")
	ctx := t.Context()
	if err := s.Create(ctx, rev("ns", "web", 1, StatusDeployed)); err != nil {
		t.Fatal(err)
	}
	lists := func() int {
		n := 0
		for _, a := range cs.Actions() {
			if a.GetVerb() == "list" {
				n++
			}
		}
		return n
	}
	last := func(want int) {
		t.Helper()
		got, err := s.Last(ctx, "web")
		if err != nil {
			t.Fatal(err)
		}
		if got.Version != want {
			t.Fatalf("last revision %d, want %d", got.Version, want)
		}
	}

	forget := s.RememberLists()
	last(1)
	last(1)
	if h, err := s.History(ctx, "web"); err != nil || len(h) != 1 {
		t.Fatalf("history %v, %v", h, err)
	}
	if n := lists(); n != 1 {
		t.Errorf("%d lists while remembering, want 1", n)
	}
	// A record read is answered from the list too: one there, and one that is not.
	if got, err := s.Get(ctx, "web", 1); err != nil || got.Version != 1 {
		t.Fatalf("get revision 1: %v, %v", got, err)
	}
	if _, err := s.Get(ctx, "web", 9); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get revision 9: %v, want ErrNotFound", err)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "get" {
			t.Errorf("a read of a record while its release's records are kept asked the API server: %v", a)
		}
	}
	if err := s.Create(ctx, rev("ns", "web", 2, StatusPendingUpgrade)); err != nil {
		t.Fatal(err)
	}
	last(2) // the write changed the list kept
	last(2)
	if err := s.Update(ctx, rev("ns", "web", 1, StatusSuperseded)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "web", 1); err != nil || got.Info.Status != StatusSuperseded {
		t.Fatalf("get revision 1 after its update: %v, %v", got, err)
	}
	if _, err := s.Deployed(ctx, "web"); !errors.Is(err, ErrNoDeployed) { // its own list, kept too
		t.Fatalf("deployed: %v, want ErrNoDeployed", err)
	}
	if err := s.Update(ctx, rev("ns", "web", 2, StatusDeployed)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Deployed(ctx, "web"); err != nil || got.Version != 2 {
		t.Fatalf("deployed after the update of revision 2: %v, %v", got, err)
	}
	if _, err := s.Prune(ctx, "web", 1); err != nil { // a delete changes the lists too
		t.Fatal(err)
	}
	if h, err := s.History(ctx, "web"); err != nil || len(h) != 1 {
		t.Fatalf("history after prune %v, %v: want the one revision left", versions(h), err)
	}
	if n := lists(); n != 2 {
		t.Errorf("%d lists after writes, want 2: the release's records and its deployed one, each listed once", n)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "get" {
			t.Errorf("a read of a record while its release's records are kept asked the API server: %v", a)
		}
	}
	// A write that fails forgets what is kept: whether it changed the object is not known.
	if err := s.Create(ctx, rev("ns", "web", 2, StatusDeployed)); !errors.Is(err, ErrExists) {
		t.Fatalf("create of a revision recorded: %v, want ErrExists", err)
	}
	last(2)
	if n := lists(); n != 3 {
		t.Errorf("%d lists after a failed write, want 3", n)
	}
	forget()
	forget() // once
	before := lists()
	last(2)
	last(2)
	if n := lists() - before; n != 2 {
		t.Errorf("%d lists after forget, want 2", n)
	}
}
