package main

import (
	"strings"
	"testing"
)

// TestRecordsGoals: the record goals compare berth's medians with Helm's on the record Helm can
// store, ask only that berth store the one Helm cannot, and compare the lists' time and memory.
func TestRecordsGoals(t *testing.T) {
	t.Parallel()
	rec := func(tool, op string, round int, secs float64, err string) recordSample {
		return recordSample{Tool: tool, Op: op, Round: round, Seconds: secs, Error: err}
	}
	r := recordsResults{
		Records: []recordCase{
			{Chart: "large-record", Samples: []recordSample{
				rec("berth", "write", 0, 9, ""), rec("berth", "write", 1, 0.2, ""), rec("berth", "read", 1, 0.3, ""),
				rec("helm", "write", 0, 0.1, ""), rec("helm", "write", 1, 0.3, ""), rec("helm", "read", 1, 0.2, ""),
			}},
			{Chart: "huge-record", HelmSize: 3 << 20, Objects: map[string]int{"berth": 4}, Stored: map[string]int{"berth": 2 << 20},
				Samples: []recordSample{
					rec("berth", "write", 1, 2, ""), rec("berth", "read", 1, 0.4, ""),
					rec("helm", "write", 0, 1, "Request entity too large: limit is 3145728"),
				}},
		},
		List: listCase{Releases: 1000, Revisions: 2, Samples: []listSample{
			{Tool: "berth", Round: 1, Seconds: 10, PeakRSSBytes: 500 << 20},
			{Tool: "helm", Round: 1, Seconds: 20, PeakRSSBytes: 400 << 20},
		}},
	}
	got := map[string]bool{}
	for _, g := range r.goals() {
		got[g.Goal] = g.Met
	}
	want := map[string]bool{
		"large-record record write: berth at most 1.0x Helm v4's time":                                               true, // the warm-up is not counted
		"large-record record read: berth at most 1.0x Helm v4's time":                                                false,
		"huge-record (3.0 MiB as Helm writes it): berth writes the record and reads it back":                         true,
		"list -A of 1000 releases of large-record, 2 revisions each: berth at most 1.0x Helm v4's time":              true,
		"list -A of 1000 releases of large-record, 2 revisions each: berth's peak memory at most Helm v4's (median)": false,
	}
	for name, met := range want {
		if m, ok := got[name]; !ok || m != met {
			t.Errorf("goal %q: met %v (present %v), want %v", name, m, ok, met)
		}
	}
	if len(got) != len(want) {
		t.Errorf("goals %v, want %d", got, len(want))
	}
	md := r.markdown()
	if !strings.Contains(md, "| huge-record | 3.0 MiB | Helm v4 | failed: Request entity too large: limit is 3145728 |") {
		t.Errorf("the table does not say Helm failed to write the huge record:\n%s", md)
	}
}

// TestRecordsFlags: records takes -report-only and refuses counts below 1.
func TestRecordsFlags(t *testing.T) {
	t.Parallel()
	cfg, err := parseRecordsFlags([]string{"-report-only", "-releases", "50"})
	if err != nil || !cfg.reportOnly || cfg.releases != 50 || cfg.revisions != 2 {
		t.Errorf("records -report-only -releases 50: %+v, %v", cfg, err)
	}
	if _, err := parseRecordsFlags([]string{"-lists", "0"}); err == nil {
		t.Error("records -lists 0: no error")
	}
}

// TestRecordCaseGoals: on large-record berth is at most Helm's time, operation by operation; on
// huge-record, which Helm cannot install, every berth operation must succeed.
func TestRecordCaseGoals(t *testing.T) {
	t.Parallel()
	var samples []sample
	for _, op := range ops {
		samples = append(samples,
			sample{Case: "large-record", Tool: "berth", Round: 1, Op: op, Seconds: 1},
			sample{Case: "large-record", Tool: "helm", Round: 1, Op: op, Seconds: 2},
			sample{Case: "huge-record", Tool: "berth", Round: 1, Op: op, Seconds: 3})
	}
	samples = append(samples, sample{Case: "huge-record", Tool: "helm", Round: 1, Op: "install", Seconds: 1, Error: "Request entity too large"})
	sum := summarize(samples, []string{"large-record", "huge-record"}, []string{"berth", "helm"}, nil, 0)
	got := map[string]bool{}
	for _, g := range sum.Goals {
		got[g.Goal] = g.Met
	}
	for _, op := range ops {
		if met, ok := got["large-record "+op+": berth at most 1.0x Helm v4"]; !ok || !met {
			t.Errorf("large-record %s: goal present %v, met %v; want met", op, ok, met)
		}
	}
	if met, ok := got["huge-record: berth installs, upgrades and uninstalls it (Helm v4 cannot install it)"]; !ok || !met {
		t.Errorf("huge-record goal present %v, met %v; want met", ok, met)
	}
	samples[len(samples)-2].Error = "failed" // berth's uninstall of huge-record
	sum = summarize(samples, []string{"large-record", "huge-record"}, []string{"berth", "helm"}, nil, 0)
	for _, g := range sum.Goals {
		if strings.HasPrefix(g.Goal, "huge-record") && (g.Met || !strings.Contains(g.Measured, "uninstall")) {
			t.Errorf("huge-record goal with a failed uninstall: %+v", g)
		}
	}
}
