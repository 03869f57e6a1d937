package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestPhaseOf(t *testing.T) {
	obj := func(resource, name string) *auditObject { return &auditObject{Resource: resource, Name: name} }
	tests := []struct {
		ev   auditEvent
		want string
	}{
		{auditEvent{Verb: "get", RequestURI: "/version"}, phaseDiscovery},
		{auditEvent{Verb: "get", RequestURI: "/apis"}, phaseDiscovery},
		{auditEvent{Verb: "create", ObjectRef: obj("leases", "berth.release.r")}, phaseLease},
		{auditEvent{Verb: "delete", ObjectRef: obj("leases", "berth.release.r")}, phaseLease},
		{auditEvent{Verb: "list", RequestURI: "/api/v1/namespaces/a/secrets?labelSelector=owner+in+%28berth%2Chelm%29%2Cname%3Dr", ObjectRef: obj("secrets", "")}, phaseRecords},
		{auditEvent{Verb: "list", RequestURI: "/api/v1/namespaces/a/secrets?labelSelector=name%3Dr%2Cowner%3Dhelm", ObjectRef: obj("secrets", "")}, phaseRecords},
		{auditEvent{Verb: "create", ObjectRef: obj("secrets", "sh.helm.release.v1.r.v1")}, phaseRecords},
		{auditEvent{Verb: "create", ObjectRef: obj("secrets", "berth.journal.r")}, phaseJournal},
		{auditEvent{Verb: "get", ObjectRef: obj("namespaces", "a")}, phaseNamespace},
		{auditEvent{Verb: "list", ObjectRef: obj("apiservices", "")}, phasePreflight},
		{auditEvent{Verb: "list", ObjectRef: obj("mutatingwebhookconfigurations", "")}, phasePreflight},
		{auditEvent{Verb: "patch", RequestURI: "/api/v1/namespaces/a/secrets/credentials?dryRun=All&fieldManager=berth", ObjectRef: obj("secrets", "credentials")}, phaseDryRun},
		{auditEvent{Verb: "patch", RequestURI: "/api/v1/namespaces/a/secrets/credentials?fieldManager=berth", ObjectRef: obj("secrets", "credentials")}, phaseApplies},
		{auditEvent{Verb: "get", ObjectRef: obj("configmaps", "config-0")}, phaseReads},
		{auditEvent{Verb: "delete", ObjectRef: obj("configmaps", "config-0")}, phaseDeletes},
		{auditEvent{Verb: "watch", ObjectRef: obj("deployments", "")}, phaseWaits},
		{auditEvent{Verb: "list", ObjectRef: obj("secrets", "")}, phaseWaits},
	}
	for _, tt := range tests {
		if got := phaseOf(tt.ev); got != tt.want {
			t.Errorf("phaseOf(%s %s %+v) = %q, want %q", tt.ev.Verb, tt.ev.RequestURI, tt.ev.ObjectRef, got, tt.want)
		}
	}
}

func TestSplitTime(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(from, to int, verb, resource, name, uri string) auditEvent {
		return auditEvent{Verb: verb, Received: at(from), Completed: at(to), RequestURI: uri,
			ObjectRef: &auditObject{Resource: resource, Name: name}}
	}
	events := []auditEvent{
		{Verb: "get", RequestURI: "/version", Received: at(100), Completed: at(104)},
		ev(104, 110, "create", "leases", "berth.release.r", ""),
		// Two dry runs and a preflight list at once: 10 ms of dry run alone, 10 shared.
		ev(115, 135, "patch", "configmaps", "a", "?dryRun=All"),
		ev(115, 125, "patch", "configmaps", "b", "?dryRun=All"),
		ev(125, 135, "list", "apiservices", "", ""),
		ev(140, 160, "watch", "deployments", "", ""),
		// A response complete after the process ended counts until its end.
		ev(170, 400, "delete", "leases", "berth.release.r", ""),
	}
	got := splitTime(at(0), at(200), events)
	want := map[string]float64{
		phaseStart: 100, phaseDiscovery: 4, phaseLease: 6 + 30, phaseDryRun: 15, phasePreflight: 5,
		phaseWaits: 20, phaseOwn: 5 + 5 + 10, phaseExit: 0,
	}
	sum := 0.0
	for p, ms := range got {
		sum += ms
		if math.Abs(ms-want[p]) > 0.01 {
			t.Errorf("%s: %.2f ms, want %.2f", p, ms, want[p])
		}
	}
	if math.Abs(sum-200) > 0.01 {
		t.Errorf("the phases sum to %.2f ms, want the 200 ms from start to end", sum)
	}
	for p, ms := range want {
		if _, ok := got[p]; !ok && ms > 0 {
			t.Errorf("%s missing, want %.2f ms", p, ms)
		}
	}

	exit := splitTime(at(0), at(200), events[:6])
	if exit[phaseExit] != 40 {
		t.Errorf("exit after the last response at 160 ms: %.2f ms, want 40", exit[phaseExit])
	}
	if none := splitTime(at(0), at(50), nil); none[phaseStart] != 50 || len(none) != 1 {
		t.Errorf("no request: %v, want all of it start", none)
	}
}

func TestSplitText(t *testing.T) {
	s := summary{Rows: []row{{Case: "small", Op: "install", Tools: map[string]toolStats{
		"berth": {SplitMS: map[string]float64{phaseStart: 150, phaseLease: 4, phaseApplies: 40}},
		"floor": {SplitMS: map[string]float64{phaseStart: 140, phaseApplies: 20}},
		"helm":  {},
	}}}}
	text := s.splitText([]string{"berth", "helm", "floor"})
	for _, want := range []string{"| case | op | tool | start | lease | applies |", "| small | install | berth | 150 | 4 | 40 |", "| small | install | floor | 140 | 0 | 20 |"} {
		if !strings.Contains(text, want) {
			t.Errorf("split table lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "| helm") || strings.Contains(text, "journal") {
		t.Errorf("a tool without a split, or a phase nobody spent time in, is shown:\n%s", text)
	}
}

func TestPerHookPhases(t *testing.T) {
	secs := spread{Median: 1, N: 1}
	rows := []row{
		{Case: "hooks", Op: "install", Tools: map[string]toolStats{"berth": {Seconds: secs, SplitMS: map[string]float64{phaseApplies: 300, phaseWaits: 900, phaseJournal: 50}}}},
		{Case: "hooks-base", Op: "install", Tools: map[string]toolStats{"berth": {Seconds: secs, SplitMS: map[string]float64{phaseApplies: 100, phaseWaits: 100, phaseJournal: 10}}}},
		{Case: "hooks", Op: "upgrade", Tools: map[string]toolStats{"berth": {Seconds: secs, SplitMS: map[string]float64{phaseApplies: 200, phaseWaits: 500, phaseJournal: 30}}}},
		{Case: "hooks-base", Op: "upgrade", Tools: map[string]toolStats{"berth": {Seconds: secs, SplitMS: map[string]float64{phaseApplies: 100, phaseWaits: 100, phaseJournal: 10}}}},
	}
	counts := map[string]int{"install": 8, "upgrade": 2}
	h := overheadOf(rows, "berth", counts, 0)
	want := map[string]float64{phaseApplies: 30, phaseWaits: 120, phaseJournal: 6}
	for p, ms := range want {
		if math.Abs(h.PhaseMS[p]-ms) > 0.001 {
			t.Errorf("%s: %.2f ms a hook, want %.2f", p, h.PhaseMS[p], ms)
		}
	}
	text := perHookPhaseText([]hookOverhead{h})
	if !strings.Contains(text, "| tool | journal | applies | waits |") || !strings.Contains(text, "| berth | 6 | 30 | 120 |") {
		t.Errorf("per-hook table:\n%s", text)
	}
}
