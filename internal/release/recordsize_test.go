package release

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"helm.sh/helm/v4/pkg/chart/common"
)

// TestFootprintOfIsWhatTheStoreWrites checks that the footprint of a record, as FootprintOf
// encodes it, is the size of the record object's data and of its parts as the store writes them,
// and what moved to the parts.
func TestFootprintOfIsWhatTheStoreWrites(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rel         *Release
		parts       int
		moved       []string
		objectAbove int
	}{
		{name: "small", rel: rev("ns", "small", 1, StatusDeployed)},
		{name: "near", rel: large("ns", "near", 1, 5<<17, 1<<10), objectAbove: MaxObjectData * 8 / 10},
		{name: "split", rel: large("ns", "split", 1, 3<<20, 1<<10), parts: 4, moved: []string{"templates and files"}},
		{name: "manifest", rel: large("ns", "manifest", 1, 1<<20, 4<<20), parts: 3, moved: []string{"templates and files", "manifest"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, moved, err := NewEncoder().FootprintOf(tc.rel)
			if err != nil {
				t.Fatal(err)
			}
			c := fake.NewClientset().CoreV1()
			if err := NewSecretStore(c, "ns").Create(context.Background(), tc.rel); err != nil {
				t.Fatal(err)
			}
			list, err := c.Secrets("ns").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var object, parts, count int
			// By their labels: a fake clientset gives the record object no UID, to own its parts
			// by, and a part without an owner is written with the record object's type.
			for _, s := range list.Items {
				if s.Labels["owner"] == "berth" {
					parts += len(s.Data[partDataKey]) + len(s.Data["release"])
					count++
				} else {
					object += len(s.Data["release"])
				}
			}
			if f.Bytes != object || f.PartBytes != parts || f.Parts != count || f.Size() != object+parts || f.Object != Key(tc.rel.Name, 1) {
				t.Errorf("footprint %+v, want record object %s of %d bytes and %d parts of %d bytes", f, Key(tc.rel.Name, 1), object, count, parts)
			}
			if f.Parts != tc.parts || !slices.Equal(moved, tc.moved) || f.Bytes < tc.objectAbove {
				t.Errorf("footprint %+v, %v moved; want %d parts, %v moved, a record object of at least %d bytes", f, moved, tc.parts, tc.moved, tc.objectAbove)
			}
		})
	}
}

// TestFootprintOfTooLargeRecord checks that a record over MaxRecordSize has no footprint but the
// error that names its size.
func TestFootprintOfTooLargeRecord(t *testing.T) {
	r := large("ns", "huge", 1, 17<<20, 1<<10)
	r.Chart.Files = append(r.Chart.Files, &common.File{Name: "files/more", Data: r.Chart.Files[0].Data})
	_, _, err := NewEncoder().FootprintOf(r)
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != MaxRecordSize || tooLarge.Size <= MaxRecordSize {
		t.Fatalf("FootprintOf = %v, want a *TooLargeError over %d bytes", err, MaxRecordSize)
	}
}
