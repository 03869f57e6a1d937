package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReportSummarizesARunAgain: "report" reads a run's results, summarizes its samples with
// this harness's goals, writes latest.json and latest.md and the README's results section, and
// says which goals were missed; a file with no samples is refused.
func TestReportSummarizesARunAgain(t *testing.T) {
	dir := t.TempDir()
	var samples []sample
	for round := 0; round <= 1; round++ {
		for _, op := range ops {
			samples = append(samples,
				sample{Case: "small", Tool: "berth", Op: op, Round: round, Seconds: 1.5, ToolSeconds: 1.5, PeakRSSBytes: 90 << 20, APIRequests: 30},
				sample{Case: "small", Tool: "floor", Op: op, Round: round, Seconds: 1, ToolSeconds: 1, PeakRSSBytes: 70 << 20, APIRequests: 20})
		}
	}
	res := results{Started: time.Date(2026, 11, 29, 14, 35, 0, 0, time.UTC), Pairs: 1, Cases: []string{"small"}, Tools: []string{"berth", "floor"},
		Summary: summary{Goals: []goal{{Goal: "an old goal", Met: true}}}, Samples: samples}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "run.json")
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readme, []byte("# Bench\n"+resultsStart+"\nold\n"+resultsEnd+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	err = runReport([]string{"--out", out, "--readme", readme, in})
	var missed goalsMissed
	if !errors.As(err, &missed) || !strings.Contains(err.Error(), "small: every operation within 1.2x of the client-go floor") {
		t.Fatalf("report: %v, want the small case's floor goal missed", err)
	}
	md, err := os.ReadFile(filepath.Join(out, "latest.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "| small: every operation within 1.2x of the client-go floor | install 1.50x, upgrade 1.50x, noop 1.50x, uninstall 1.50x | no |"; !strings.Contains(string(md), want) || strings.Contains(string(md), "an old goal") {
		t.Errorf("latest.md lacks %q, or keeps the old goals:\n%s", want, md)
	}
	text, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), string(md)) || strings.Contains(string(text), "\nold\n") || !strings.HasSuffix(string(text), resultsEnd+"\nafter\n") {
		t.Errorf("README's results section not replaced by latest.md:\n%s", text)
	}
	if err := runReport([]string{"--report-only", "--out", out, "--readme", "", in}); err != nil {
		t.Errorf("report --report-only: %v, want no error", err)
	}

	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{"cases": ["small"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runReport([]string{"--out", out, "--readme", "", empty}); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Errorf("report of a file without samples: %v, want it refused", err)
	}
}
