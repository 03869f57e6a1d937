package release

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"
)

// verifiedRev is revision version of release web, of a chart with a template and values whose
// numbers a record reads back as float64, with proof p.
func verifiedRev(t *testing.T, version int, p *Provenance) *Release {
	t.Helper()
	r := rev("ns", "web", version, StatusDeployed)
	r.Chart.Templates = []*common.File{{Name: "templates/b.yaml", Data: []byte("b")}, {Name: "templates/a.yaml", Data: []byte("a")}}
	r.Chart.Values = map[string]any{"replicas": 3, "big": int64(1) << 40}
	if err := SetProvenance(r, p); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestProvenanceRecorded(t *testing.T) {
	ctx := context.Background()
	idx := int64(42)
	proof := &Provenance{Provider: ProviderCosign, Reference: "oci://registry.example/charts/web", Digest: "sha256:0a1b",
		Signer: "https://github.com/team/web/.github/workflows/release.yaml@refs/heads/main", Issuer: "https://token.actions.githubusercontent.com",
		LogIndex: &idx, Verified: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	store := NewMemoryStore("ns")
	if err := store.Create(ctx, verifiedRev(t, 1, proof)); err != nil {
		t.Fatal(err)
	}
	got, err := store.Get(ctx, "web", 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ProvenanceOf(got)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(proof, p); diff != "" {
		t.Errorf("provenance read back (-written +read):\n%s", diff)
	}
	if v := got.Labels[VerifiedLabel]; len(v) > 63 {
		t.Errorf("label %s=%q is longer than a label value may be", VerifiedLabel, v)
	}
}

// TestProvenanceNotTakenFrom: a proof is never read from what a chart's author wrote, nor
// carried by an upgrade to another chart, nor kept when a revision is recorded unverified.
func TestProvenanceNotTakenFrom(t *testing.T) {
	proof := &Provenance{Provider: ProviderPGP, Signer: "Team <team@example.com> (4A1B)", Digest: "sha256:0a1b"}
	for _, tt := range []struct {
		name string
		rel  func(t *testing.T) *Release
	}{
		{"a chart's own annotation", func(t *testing.T) *Release {
			r := verifiedRev(t, 1, proof)
			delete(r.Labels, VerifiedLabel)
			return r
		}},
		{"a label carried to another chart's revision", func(t *testing.T) *Release {
			r := verifiedRev(t, 1, proof)
			r.Chart.Templates[0].Data = []byte("changed")
			return r
		}},
		{"a label carried to other values", func(t *testing.T) *Release {
			r := verifiedRev(t, 1, proof)
			r.Chart.Values["replicas"] = 4
			return r
		}},
		{"another proof under the label", func(t *testing.T) *Release {
			r := verifiedRev(t, 1, proof)
			r.Chart.Metadata.Annotations[ProvenanceAnnotation] = `{"provider":"pgp","signer":"someone else"}`
			return r
		}},
		{"recorded unverified", func(t *testing.T) *Release {
			r := verifiedRev(t, 1, proof)
			if err := SetProvenance(r, nil); err != nil {
				t.Fatal(err)
			}
			if _, ok := r.Chart.Metadata.Annotations[ProvenanceAnnotation]; ok {
				t.Error("the chart's provenance annotation stayed on a revision recorded unverified")
			}
			return r
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ProvenanceOf(tt.rel(t))
			if p != nil || err != nil {
				t.Errorf("ProvenanceOf = %+v, %v; want none", p, err)
			}
		})
	}
}

// TestProvenanceKeptByARollback: a rollback copies the chart and the labels of the revision it
// rolls back to, as Helm's does: the proof holds for the new revision.
func TestProvenanceKeptByARollback(t *testing.T) {
	old := verifiedRev(t, 1, &Provenance{Provider: ProviderNotation, Signer: "CN=release,O=team"})
	back := rev("ns", "web", 3, StatusDeployed)
	back.Chart, back.Labels = old.Chart, old.Labels
	if p, err := ProvenanceOf(back); p == nil || err != nil {
		t.Errorf("ProvenanceOf the rollback = %v, %v; want the proof of revision 1", p, err)
	}
}

// FuzzProvenanceOf: whatever a record's annotation and label say, reading its proof neither
// panics nor takes a proof whose seal does not hold.
func FuzzProvenanceOf(f *testing.F) {
	f.Add(`{"provider":"cosign","signer":"me"}`, "cosign-0123")
	f.Add(`{"provider":"pgp","logIndex":-1}`, "pgp-")
	f.Fuzz(func(t *testing.T, annotation, label string) {
		r := rev("ns", "web", 1, StatusDeployed)
		r.Chart.Metadata.Annotations = map[string]string{ProvenanceAnnotation: annotation}
		r.Labels = map[string]string{VerifiedLabel: label}
		p, err := ProvenanceOf(r)
		if p != nil && (err != nil || label != seal(p.Provider, []byte(annotation), r.Chart)) {
			t.Fatalf("ProvenanceOf = %+v, %v for a label that does not seal it", p, err)
		}
	})
}
