package main

import (
	"errors"
	"strings"
	"testing"
)

// TestJudge: a benchmark that missed a goal fails naming it, unless -report-only; one that met
// every goal, or judged none, does not.
func TestJudge(t *testing.T) {
	t.Parallel()
	goals := []goal{
		{Goal: "install at most 1.10x Helm's", Measured: "1.02x", Met: true},
		{Goal: "uninstall at most 1.25x the floor", Measured: "1.40x", Met: false},
	}
	err := judge(missedGoals(goals), false)
	var missed goalsMissed
	if !errors.As(err, &missed) || len(missed) != 1 || !strings.Contains(err.Error(), "uninstall at most 1.25x the floor: 1.40x") {
		t.Errorf("judge of a missed goal = %v, want an error naming it", err)
	}
	if err := judge(missedGoals(goals), true); err != nil {
		t.Errorf("judge with -report-only = %v, want nil", err)
	}
	if err := judge(missedGoals(goals[:1]), false); err != nil {
		t.Errorf("judge of goals all met = %v, want nil", err)
	}
	controller := []controllerGoal{
		{Goal: "1000 Releases Ready in at most 90 s", Measured: "95.0 s", Met: "no"},
		{Goal: "controller peak memory at most 200 MiB", Measured: "190 MiB", Met: "yes"},
		{Goal: "1000 Releases Ready in at most 90 s, controller peak memory at most 200 MiB", Measured: "not run", Met: "–"},
	}
	if got := missedControllerGoals(controller); len(got) != 1 || got[0] != "1000 Releases Ready in at most 90 s: 95.0 s" {
		t.Errorf("missed controller goals = %q, want the one not met", got)
	}
}

// TestReportOnlyFlag: "run" and "controller" take -report-only.
func TestReportOnlyFlag(t *testing.T) {
	t.Parallel()
	cfg, err := parseControllerFlags([]string{"-report-only"})
	if err != nil || !cfg.reportOnly {
		t.Errorf("controller -report-only: %+v, %v; want reportOnly", cfg.reportOnly, err)
	}
	// run reads its flags, then stops at the missing binary, before any cluster.
	err = runBench([]string{"-report-only", "-berth", "/nonexistent/berth"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/berth not found") {
		t.Errorf("run -report-only with no berth: %v, want the binary not found", err)
	}
}
