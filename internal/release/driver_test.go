package release

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestParseDriver(t *testing.T) {
	for _, tt := range []struct {
		name string
		want Driver
	}{
		{"", DriverSecret}, {"secret", DriverSecret}, {"secrets", DriverSecret},
		{"configmap", DriverConfigMap}, {"configmaps", DriverConfigMap}, {"memory", DriverMemory},
		{"sql", ""}, {"Secret", ""}, {"floppy", ""},
	} {
		got, err := ParseDriver(tt.name)
		var unknown *UnknownDriverError
		if tt.want == "" {
			if !errors.As(err, &unknown) || unknown.Name != tt.name {
				t.Errorf("ParseDriver(%q) = %q, %v; want an UnknownDriverError naming it", tt.name, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseDriver(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	if _, err := Open("floppy", fake.NewClientset(), "ns", DefaultExpansion(), nil); err == nil {
		t.Error("Open of an unknown driver succeeded")
	}
}

// TestOpenKeepsWhatEachDriverKeeps: a store Open returns keeps its records where helm's driver
// of the same name does, its journals beside them (in memory for the memory driver, where
// nothing of the release reaches the cluster but its lease), and its leases in the cluster.
func TestOpenKeepsWhatEachDriverKeeps(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		driver  Driver
		kind    string // of the record object in the cluster; "" for none
		journal bool   // kept in the cluster
	}{
		{DriverSecret, "Secret", true},
		{DriverConfigMap, "ConfigMap", true},
		{DriverMemory, "", false},
	} {
		t.Run(string(tt.driver), func(t *testing.T) {
			c := fake.NewClientset()
			s, err := Open(tt.driver, c, "ns", ControllerExpansion(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Create(ctx, rev("ns", "web", 1, StatusDeployed)); err != nil {
				t.Fatal(err)
			}
			if last, err := s.Last(ctx, "web"); err != nil || last.Version != 1 {
				t.Fatalf("Last: %v, %v", last, err)
			}
			_, serr := c.CoreV1().Secrets("ns").Get(ctx, Key("web", 1), metav1.GetOptions{})
			_, cerr := c.CoreV1().ConfigMaps("ns").Get(ctx, Key("web", 1), metav1.GetOptions{})
			if got := map[bool]string{serr == nil: "Secret", cerr == nil: "ConfigMap"}[true]; got != tt.kind {
				t.Errorf("record kept in a %q in the cluster, want %q", got, tt.kind)
			}
			obj := s.RecordObject("web", 1, StatusDeployed)
			if (obj == nil) != (tt.kind == "") || (obj != nil && obj.GetKind() != tt.kind) {
				t.Errorf("RecordObject: %v, want kind %q", obj, tt.kind)
			}

			j := s.Journals()
			if j == nil || s.Leases() == nil {
				t.Fatalf("Journals %v, Leases %v: want both", j, s.Leases())
			}
			// Journals kept in the records' Secrets are read from the lists the store remembers.
			if shared := j.lists == s.(*HelmStore).memo; shared != (tt.driver != DriverConfigMap) {
				t.Errorf("journals read from the store's remembered lists: %v", shared)
			}
			version, err := j.Put(ctx, &Journal{Release: "web", Operation: OpUpgrade, Revision: 2}, "")
			if err != nil {
				t.Fatal(err)
			}
			if got, v, err := j.Read(ctx, "web"); err != nil || got == nil || got.Revision != 2 || v != version {
				t.Errorf("Read after Put: %+v at %q, %v", got, v, err)
			}
			_, err = c.CoreV1().Secrets("ns").Get(ctx, JournalKey("web"), metav1.GetOptions{})
			if inCluster := err == nil; inCluster != tt.journal || (!inCluster && !apierrors.IsNotFound(err)) {
				t.Errorf("journal in the cluster: %v (%v), want %v", inCluster, err, tt.journal)
			}
			if (j.Object("web") != nil) != tt.journal {
				t.Errorf("journal Object: %v, want one only for a journal in the cluster", j.Object("web"))
			}
			if other := s.In("other").(*HelmStore); other.expansion.Max != ControllerExpansion().Max || other.Namespace() != "other" ||
				other.Journals() == nil || other.Leases() == nil {
				t.Errorf("In: namespace %q, expansion %+v, journals and leases %v %v: want those of the store", other.Namespace(),
					other.expansion, other.Journals(), other.Leases())
			}
		})
	}
}

// TestMemoryJournalsAreConditional: the journals of a memory store refuse a write or delete at
// a version another writer changed, as the API server refuses one.
func TestMemoryJournalsAreConditional(t *testing.T) {
	ctx := context.Background()
	j := NewMemoryStore("ns").Journals()
	v1, err := j.Put(ctx, &Journal{Release: "web", Revision: 1}, "")
	if err != nil {
		t.Fatal(err)
	}
	var changed *JournalChangedError
	if _, err := j.Put(ctx, &Journal{Release: "web", Revision: 1}, ""); !errors.As(err, &changed) {
		t.Errorf("a second create: %v, want a JournalChangedError", err)
	}
	v2, err := j.Put(ctx, &Journal{Release: "web", Revision: 2}, v1)
	if err != nil || v2 == v1 {
		t.Fatalf("update at %q: %q, %v", v1, v2, err)
	}
	if _, err := j.Put(ctx, &Journal{Release: "web", Revision: 3}, v1); !errors.As(err, &changed) {
		t.Errorf("an update at an old version: %v, want a JournalChangedError", err)
	}
	if err := j.Delete(ctx, "web", v1); !errors.As(err, &changed) {
		t.Errorf("a delete at an old version: %v, want a JournalChangedError", err)
	}
	if err := j.Delete(ctx, "web", v2); err != nil {
		t.Fatal(err)
	}
	if got, _, err := j.Read(ctx, "web"); got != nil || err != nil {
		t.Errorf("Read after Delete: %+v, %v", got, err)
	}
}
