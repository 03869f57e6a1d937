package doctor

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/internal/resource"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// sample is a report of one finding of each severity, given out of order.
func sample() Report {
	r := Report{Scope: "cluster", Findings: []Finding{
		{
			Severity: Warning, Check: "pdb",
			Object:  resource.Identity{Group: "policy", Kind: "PodDisruptionBudget", Namespace: "shop", Name: "web"},
			Problem: "allows 0 disruptions of its 1 Pod(s) (1 healthy, 1 desired)",
			Breaks:  "evicting any of its Pods (a node drain, an upgrade that evicts) waits until it allows one",
			Fix:     "scale the workload up or relax the budget's minAvailable/maxUnavailable before draining or upgrading",
		},
		{
			Severity: Blocker, Check: "webhook",
			Object:  resource.Identity{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration", Name: "guard"},
			Problem: `webhook "pods.guard.example.com" (failurePolicy Fail, timeoutSeconds 5) cannot answer: it calls service shop/guard (no ready endpoints)`,
			Breaks:  "every DELETE of pods fails while its backend does not answer",
			Fix:     "bring its backend up, or delete ValidatingWebhookConfiguration guard if it is no longer used",
		},
	}}
	r.sort()
	return r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to write it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

func TestReportText(t *testing.T) {
	var b bytes.Buffer
	if err := sample().WriteText(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.txt", b.Bytes())

	b.Reset()
	if err := (Report{Scope: "namespace shop", Findings: []Finding{}}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "clean.txt", b.Bytes())
}

func TestReportJSON(t *testing.T) {
	got, err := json.MarshalIndent(sample(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", append(got, '\n'))
}

func TestWorstAndCount(t *testing.T) {
	r := sample()
	if r.Worst() != Blocker {
		t.Errorf("Worst = %q, want blocker", r.Worst())
	}
	if b, w := r.Count(); b != 1 || w != 1 {
		t.Errorf("Count = %d blockers, %d warnings; want 1 and 1", b, w)
	}
	if r.Findings[0].Severity != Blocker {
		t.Errorf("blockers are not listed first: %+v", r.Findings)
	}
	if (Report{}).Worst() != "" {
		t.Error("an empty report has a worst severity")
	}
}
