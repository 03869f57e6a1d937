package release

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestSweepPartsDeletesThoseNoRecordNames leaves beside a record the parts of another part set
// of the same revision, owned by its record object, as an update stopped midway leaves them:
// SweepParts deletes them and nothing else, the record reads back whole, and a revision whose
// record object is gone loses all its parts.
func TestSweepPartsDeletesThoseNoRecordNames(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	s := NewSecretStore(client.CoreV1(), "ns")
	if err := s.Create(ctx, large("ns", "big", 1, 3<<20, 1<<10)); err != nil {
		t.Fatal(err)
	}
	secrets := client.CoreV1().Secrets("ns")
	parts, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: partsSelector("big")})
	if err != nil || len(parts.Items) < 2 {
		t.Fatalf("parts: %d (%v), want several", len(parts.Items), err)
	}
	other := strings.Repeat("f", 64)
	var strays []string
	for i, p := range parts.Items[:2] {
		p.ObjectMeta = metav1.ObjectMeta{Name: partName(Key("big", 1), other, i), Labels: partLabels("big", 1, other),
			OwnerReferences: p.OwnerReferences}
		if _, err := secrets.Create(ctx, &p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		strays = append(strays, p.Name)
	}

	deleted, err := s.SweepParts(ctx, "big", 1)
	slices.Sort(deleted)
	if err != nil || !slices.Equal(deleted, strays) {
		t.Fatalf("SweepParts = %v, %v; want %v", deleted, err, strays)
	}
	if _, err := s.Get(ctx, "big", 1); err != nil {
		t.Fatalf("the record after the sweep: %v", err)
	}
	if deleted, err := s.SweepParts(ctx, "big", 1); err != nil || len(deleted) > 0 {
		t.Errorf("SweepParts again = %v, %v; want nothing deleted", deleted, err)
	}

	if err := secrets.Delete(ctx, Key("big", 1), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted, err = s.SweepParts(ctx, "big", 1)
	if err != nil || len(deleted) != len(parts.Items) {
		t.Errorf("SweepParts without the record object = %v, %v; want its %d parts deleted", deleted, err, len(parts.Items))
	}
}
