package release

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEncryptedValuesRecorded(t *testing.T) {
	tests := []struct {
		name  string
		chart map[string]string // the chart's own annotations
		paths [][]string
		want  [][]string
	}{
		{name: "paths are recorded sorted, each once", paths: [][]string{{"db", "password"}, {"a.b"}, {"db", "password"}},
			want: [][]string{{"a.b"}, {"db", "password"}}},
		{name: "none", want: nil},
		{name: "a chart's own annotation is replaced", chart: map[string]string{EncryptedValuesAnnotation: `[["nothing"]]`, "keep": "me"},
			paths: [][]string{{"token"}}, want: [][]string{{"token"}}},
		{name: "a chart's own annotation is removed", chart: map[string]string{EncryptedValuesAnnotation: `[["token"]]`}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			r := rev("ns", "web", 1, StatusDeployed)
			r.Chart.Metadata.Annotations = tt.chart
			given := r.Chart
			if err := SetEncryptedValues(r, tt.paths); err != nil {
				t.Fatal(err)
			}
			if _, ok := given.Metadata.Annotations[EncryptedValuesAnnotation]; ok != (tt.chart[EncryptedValuesAnnotation] != "") {
				t.Error("SetEncryptedValues changed the chart it was given")
			}
			store := NewMemoryStore("ns")
			if err := store.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			got, err := store.Get(ctx, "web", 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, EncryptedValuesOf(got)); diff != "" {
				t.Errorf("EncryptedValuesOf (-want +got):\n%s", diff)
			}
			if tt.chart["keep"] != "" && got.Chart.Metadata.Annotations["keep"] != "me" {
				t.Error("the chart's other annotations were not kept")
			}
		})
	}
}

// TestEncryptedValuesSealed: the paths are recorded before the proof of the chart's
// verification, which holds with them.
func TestEncryptedValuesSealed(t *testing.T) {
	r := rev("ns", "web", 1, StatusDeployed)
	if err := SetEncryptedValues(r, [][]string{{"token"}}); err != nil {
		t.Fatal(err)
	}
	if err := SetProvenance(r, &Provenance{Provider: ProviderPGP, Signer: "me"}); err != nil {
		t.Fatal(err)
	}
	if p, err := ProvenanceOf(r); p == nil || err != nil {
		t.Errorf("ProvenanceOf = %v, %v; want the proof", p, err)
	}
}

// FuzzEncryptedValuesOf: whatever a record's annotation says, reading its paths neither panics
// nor returns an empty path or more paths than the bound.
func FuzzEncryptedValuesOf(f *testing.F) {
	f.Add(`[["db","password"],["token"]]`)
	f.Add(`[[],[""],null]`)
	f.Add(`{"a":1}`)
	f.Fuzz(func(t *testing.T, annotation string) {
		r := rev("ns", "web", 1, StatusDeployed)
		r.Chart.Metadata.Annotations = map[string]string{EncryptedValuesAnnotation: annotation}
		paths := EncryptedValuesOf(r)
		if len(paths) > maxEncryptedPaths {
			t.Fatalf("%d paths, more than %d", len(paths), maxEncryptedPaths)
		}
		for _, p := range paths {
			if len(p) == 0 || len(p) > maxPathKeys {
				t.Fatalf("a path of %d keys", len(p))
			}
		}
	})
}
