package release

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// testStore checks the behaviour every Store must have, on an empty store of namespace ns.
func testStore(t *testing.T, s *HelmStore) {
	ctx := t.Context()
	ns := s.Namespace()
	t.Run("not found", func(t *testing.T) {
		checks := map[string]func() error{
			"Get":     func() error { _, err := s.Get(ctx, "nope", 1); return err },
			"Last":    func() error { _, err := s.Last(ctx, "nope"); return err },
			"History": func() error { _, err := s.History(ctx, "nope"); return err },
			"Delete":  func() error { _, err := s.Delete(ctx, "nope", 1); return err },
			"Update":  func() error { return s.Update(ctx, rev(ns, "nope", 1, StatusDeployed)) },
		}
		for op, check := range checks {
			err := check()
			var nf *NotFoundError
			if !errors.Is(err, ErrNotFound) || !errors.As(err, &nf) {
				t.Errorf("%s of a missing release: error %v, want a NotFoundError", op, err)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, "release: not found") || !strings.Contains(msg, `"nope"`) ||
				!strings.Contains(msg, ns) {
				t.Errorf("%s: error %q does not name the release and namespace %q", op, msg, ns)
			}
		}
		if _, err := s.Deployed(ctx, "nope"); !errors.Is(err, ErrNoDeployed) {
			t.Errorf("Deployed of a missing release: error %v, want ErrNoDeployed", err)
		}
	})

	t.Run("create, read, update", func(t *testing.T) {
		r1 := rev(ns, "app", 1, StatusDeployed)
		if err := s.Create(ctx, r1); err != nil {
			t.Fatalf("Create: %v", err)
		}
		if err := s.Create(ctx, rev(ns, "app", 1, StatusDeployed)); !errors.Is(err, ErrExists) {
			t.Errorf("second Create of revision 1: error %v, want ErrExists", err)
		}
		got, err := s.Get(ctx, "app", 1)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if encoded(t, got) != encoded(t, r1) {
			t.Errorf("Get returned\n%s\nwant\n%s", encoded(t, got), encoded(t, r1))
		}

		r1.Info.Status = StatusSuperseded
		if err := s.Update(ctx, r1); err != nil {
			t.Fatalf("Update: %v", err)
		}
		r2 := rev(ns, "app", 2, StatusDeployed)
		if err := s.Create(ctx, r2); err != nil {
			t.Fatalf("Create revision 2: %v", err)
		}
		if err := s.Create(ctx, rev(ns, "other", 1, StatusFailed)); err != nil {
			t.Fatalf("Create other: %v", err)
		}

		last, err := s.Last(ctx, "app")
		if err != nil || last.Version != 2 {
			t.Errorf("Last = %v, %v; want revision 2", last, err)
		}
		dep, err := s.Deployed(ctx, "app")
		if err != nil || dep.Version != 2 {
			t.Errorf("Deployed = %v, %v; want revision 2", dep, err)
		}
		h, err := s.History(ctx, "app")
		if err != nil {
			t.Fatalf("History: %v", err)
		}
		if got := versions(h); !slices.Equal(got, []int{1, 2}) {
			t.Errorf("History versions = %v, want [1 2]", got)
		}
		if h[0].Info.Status != StatusSuperseded || h[0].Labels["status"] != "superseded" {
			t.Errorf("revision 1 after Update: status %q, label %q; want superseded", h[0].Info.Status, h[0].Labels["status"])
		}
		list, err := s.List(ctx, ListOptions{})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		var names []string
		for _, r := range list {
			names = append(names, r.Name+":"+r.Info.Status.String())
		}
		if want := []string{"app:deployed", "other:failed"}; !slices.Equal(names, want) {
			t.Errorf("List = %v, want %v", names, want)
		}
	})

	t.Run("wrong namespace", func(t *testing.T) {
		if err := s.Create(ctx, rev("elsewhere", "app", 9, StatusDeployed)); err == nil {
			t.Error("Create of a release of another namespace: no error")
		}
	})

	t.Run("prune and delete", func(t *testing.T) {
		// history: 1 superseded, 2 deployed, 3 failed, 4 failed, 5 pending-upgrade
		for v, st := range map[int]Status{1: StatusSuperseded, 2: StatusDeployed, 3: StatusFailed, 4: StatusFailed, 5: StatusPendingUpgrade} {
			if err := s.Create(ctx, rev(ns, "pruned", v, st)); err != nil {
				t.Fatalf("Create revision %d: %v", v, err)
			}
		}
		deleted, err := s.Prune(ctx, "pruned", 2)
		if err != nil {
			t.Fatalf("Prune: %v", err)
		}
		// Keeps the deployed revision 2 although it is old: 1, 3, 4 go, 2 and 5 stay.
		if !slices.Equal(deleted, []int{1, 3, 4}) {
			t.Errorf("Prune deleted %v, want [1 3 4]", deleted)
		}
		h, err := s.History(ctx, "pruned")
		if err != nil {
			t.Fatalf("History: %v", err)
		}
		if got := versions(h); !slices.Equal(got, []int{2, 5}) {
			t.Errorf("History after Prune = %v, want [2 5]", got)
		}
		if deleted, err := s.Prune(ctx, "pruned", 5); err != nil || len(deleted) != 0 {
			t.Errorf("Prune below the limit deleted %v, %v", deleted, err)
		}
		if deleted, err := s.Prune(ctx, "nope", 1); err != nil || len(deleted) != 0 {
			t.Errorf("Prune of a missing release deleted %v, %v", deleted, err)
		}

		got, err := s.Delete(ctx, "pruned", 5)
		if err != nil || got.Version != 5 {
			t.Fatalf("Delete = %v, %v", got, err)
		}
		if _, err := s.Get(ctx, "pruned", 5); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get after Delete: error %v, want ErrNotFound", err)
		}
	})

	t.Run("purge", func(t *testing.T) {
		for v, st := range map[int]Status{1: StatusSuperseded, 2: StatusDeployed, 3: StatusFailed} {
			if err := s.Create(ctx, rev(ns, "purged", v, st)); err != nil {
				t.Fatalf("Create revision %d: %v", v, err)
			}
		}
		// A release whose name starts with the purged one's is not the purged one's.
		if err := s.Create(ctx, rev(ns, "purged-too", 1, StatusDeployed)); err != nil {
			t.Fatalf("Create purged-too: %v", err)
		}
		deleted, err := s.Purge(ctx, "purged")
		if err != nil || !slices.Equal(deleted, []int{1, 2, 3}) {
			t.Fatalf("Purge deleted %v, %v; want [1 2 3]", deleted, err)
		}
		if _, err := s.History(ctx, "purged"); !errors.Is(err, ErrNotFound) {
			t.Errorf("History after Purge: error %v, want ErrNotFound", err)
		}
		if h, err := s.History(ctx, "purged-too"); err != nil || !slices.Equal(versions(h), []int{1}) {
			t.Errorf("History of purged-too after purging purged: %v, %v; want [1]", h, err)
		}
		if deleted, err := s.Purge(ctx, "purged"); err != nil || len(deleted) != 0 {
			t.Errorf("second Purge deleted %v, %v; want nothing", deleted, err)
		}
	})
}

func TestMemoryStore(t *testing.T) {
	testStore(t, NewMemoryStore("mem"))
}

func TestMemoryStoreAllNamespaces(t *testing.T) {
	ctx := context.Background()
	a := NewMemoryStore("a")
	b := a.In("b")
	for _, r := range []*Release{rev("a", "web", 1, StatusDeployed), rev("b", "web", 1, StatusFailed)} {
		var s Store = a
		if r.Namespace == "b" {
			s = b
		}
		if err := s.Create(ctx, r); err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	for _, tt := range []struct {
		store Store
		all   bool
		want  []string
	}{
		{a, false, []string{"a"}},
		{b, false, []string{"b"}},
		{a, true, []string{"a", "b"}},
	} {
		list, err := tt.store.List(ctx, ListOptions{AllNamespaces: tt.all})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		var got []string
		for _, r := range list {
			got = append(got, r.Namespace)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("List from %s (all namespaces %v) = %v, want %v", tt.store.Namespace(), tt.all, got, tt.want)
		}
	}
}

// TestLastDecodesTheNewestAlone checks that Last finds the newest revision by the version labels
// (revision 10 after 9, not as text) and reads that record alone.
func TestLastDecodesTheNewestAlone(t *testing.T) {
	ctx := context.Background()
	core := fake.NewClientset().CoreV1()
	s := NewSecretStore(core, "ns")
	for v := 1; v <= 10; v++ {
		if err := s.Create(ctx, rev("ns", "app", v, StatusSuperseded)); err != nil {
			t.Fatalf("Create revision %d: %v", v, err)
		}
	}
	old, err := core.Secrets("ns").Get(ctx, "sh.helm.release.v1.app.v9", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old.Data["release"] = []byte("not a record")
	if _, err := core.Secrets("ns").Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	last, err := s.Last(ctx, "app")
	if err != nil || last.Version != 10 {
		t.Fatalf("Last = %v, %v; want revision 10", last, err)
	}
	if last.Labels["owner"] != "helm" || last.Labels["version"] != "10" {
		t.Errorf("Last's labels = %v, want those of its Secret, as History gives them", last.Labels)
	}
	// Helm's driver skips a record it cannot decode: revision 9 is broken indeed.
	if h, err := s.History(ctx, "app"); err != nil || slices.Contains(versions(h), 9) {
		t.Errorf("History = %v, %v; want every revision but the broken 9", versions(h), err)
	}
}
