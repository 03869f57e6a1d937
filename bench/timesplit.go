package main

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// The phases a tool's wall time is split into, by what it waited for at each moment: the kind of
// request it had in flight (the API server's audit log says when each was received and when its
// response was complete), its own work when it had none, its start before its first request and
// its exit after its last response.
const (
	phaseStart     = "start"
	phaseDiscovery = "discovery"
	phaseLease     = "lease"
	phaseRecords   = "records"
	phaseJournal   = "journal"
	phaseNamespace = "namespace"
	phasePreflight = "preflight"
	phaseDryRun    = "dry run"
	phaseReads     = "reads"
	phaseApplies   = "applies"
	phaseDeletes   = "deletes"
	phaseWaits     = "waits"
	phaseOwn       = "own work"
	phaseExit      = "exit"
)

// phases are the phases in the order the split's table shows them.
var phases = []string{phaseStart, phaseDiscovery, phaseLease, phaseRecords, phaseJournal, phaseNamespace,
	phasePreflight, phaseDryRun, phaseReads, phaseApplies, phaseDeletes, phaseWaits, phaseOwn, phaseExit}

// phaseOf says which phase request ev belongs to: what the tool waits for while it is in flight.
// The same rules read berth's, Helm's and the floor's requests.
func phaseOf(ev auditEvent) string {
	ref := ev.ObjectRef
	if ref == nil || ref.Resource == "" {
		return phaseDiscovery // /version, /api, /apis, /openapi
	}
	if strings.Contains(ev.RequestURI, "dryRun=") {
		return phaseDryRun
	}
	switch ref.Resource {
	case "leases":
		return phaseLease
	case "namespaces":
		if ref.Name != "" && (ev.Verb == "get" || ev.Verb == "list") {
			return phaseNamespace
		}
	case "validatingwebhookconfigurations", "mutatingwebhookconfigurations", "apiservices":
		if ev.Verb == "list" {
			return phasePreflight
		}
	case "secrets":
		switch {
		case strings.HasPrefix(ref.Name, "sh.helm.release."):
			return phaseRecords
		case strings.HasPrefix(ref.Name, "berth.journal."):
			return phaseJournal
		case ref.Name == "" && strings.Contains(ev.RequestURI, "labelSelector=") &&
			(strings.Contains(ev.RequestURI, "owner") || strings.Contains(ev.RequestURI, "part-set")):
			return phaseRecords // the release's records, listed by their labels
		}
	}
	switch ev.Verb {
	case "get":
		return phaseReads
	case "create", "update", "patch":
		return phaseApplies
	case "delete", "deletecollection":
		return phaseDeletes
	}
	return phaseWaits // list and watch
}

// splitTime splits the wall time from start to end of a process whose requests are events by
// phase, in milliseconds: each moment goes to the phases of the requests then in flight (shared
// equally when they are of several phases), to phaseOwn when none was between its first request
// and its last response, and to phaseStart and phaseExit before and after them. The phases sum to
// end minus start.
func splitTime(start, end time.Time, events []auditEvent) map[string]float64 {
	type span struct {
		from, to time.Time
		phase    string
	}
	var spans []span
	for _, ev := range events {
		from, to := ev.Received, ev.Completed
		if to.IsZero() || to.After(end) {
			to = end
		}
		if from.Before(start) {
			from = start
		}
		if !to.After(from) {
			continue
		}
		spans = append(spans, span{from, to, phaseOf(ev)})
	}
	out := map[string]float64{}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	if len(spans) == 0 {
		out[phaseStart] = ms(end.Sub(start))
		return out
	}
	cuts := []time.Time{start, end}
	first, last := spans[0].from, spans[0].to
	for _, s := range spans {
		cuts = append(cuts, s.from, s.to)
		if s.from.Before(first) {
			first = s.from
		}
		if s.to.After(last) {
			last = s.to
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i].Before(cuts[j]) })
	cuts = slices.CompactFunc(cuts, func(a, b time.Time) bool { return a.Equal(b) })
	for i := 0; i+1 < len(cuts); i++ {
		a, b := cuts[i], cuts[i+1]
		if a.Before(start) || b.After(end) {
			continue
		}
		var active []string
		for _, s := range spans {
			if !s.from.After(a) && !s.to.Before(b) && !slices.Contains(active, s.phase) {
				active = append(active, s.phase)
			}
		}
		d := ms(b.Sub(a))
		switch {
		case len(active) > 0:
			for _, p := range active {
				out[p] += d / float64(len(active))
			}
		case !b.After(first):
			out[phaseStart] += d
		case !a.Before(last):
			out[phaseExit] += d
		default:
			out[phaseOwn] += d
		}
	}
	return out
}

// splitText is the table of where each tool's wall time went, by phase (median ms of the counted
// rounds), for the operations of cases; the phases no tool spent a millisecond in are left out.
func (s summary) splitText(tools []string) string {
	shown := shownPhases(func(p string) bool {
		return slices.ContainsFunc(s.Rows, func(r row) bool {
			return slices.ContainsFunc(tools, func(t string) bool { return r.Tools[t].SplitMS[p] >= 0.5 })
		})
	})
	if len(shown) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Where the wall time went until the tool returned (ms, median of the counted rounds), by what it waited for: the requests\n")
	b.WriteString("in flight at each moment, by their kind (shared when several were), from the API server's audit log; \"own work\" when\n")
	b.WriteString("none was, between its first request and its last response; \"start\" before its first request, \"exit\" after its last.\n\n")
	b.WriteString("| case | op | tool | " + strings.Join(shown, " | ") + " |\n|---|---|---|" + strings.Repeat("---|", len(shown)) + "\n")
	for _, r := range s.Rows {
		for _, t := range tools {
			split := r.Tools[t].SplitMS
			if len(split) == 0 {
				continue
			}
			cells := []string{r.Case, r.Op, toolLabel(t)}
			for _, p := range shown {
				cells = append(cells, fmt.Sprintf("%.0f", split[p]))
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
	}
	return b.String()
}

// medianSplit is the median of each phase over samples' splits; nil when none has one.
func medianSplit(samples []sample) map[string]float64 {
	byPhase := map[string][]float64{}
	n := 0
	for _, s := range samples {
		if s.SplitMS == nil {
			continue
		}
		n++
		for _, p := range phases {
			byPhase[p] = append(byPhase[p], s.SplitMS[p])
		}
	}
	if n == 0 {
		return nil
	}
	out := map[string]float64{}
	for p, xs := range byPhase {
		out[p] = spreadOf(xs).Median
	}
	return out
}

// perHookPhaseText is the table of where each tool's time per hook went, by phase (ms, the
// hooks case less hooks-base, from the medians of each phase, over the hooks run); the phases
// no tool spent half a millisecond in are left out. Empty when no tool has the split.
func perHookPhaseText(hooks []hookOverhead) string {
	shown := shownPhases(func(p string) bool {
		return slices.ContainsFunc(hooks, func(h hookOverhead) bool { return math.Abs(h.PhaseMS[p]) >= 0.5 })
	})
	if len(shown) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nPer hook, by what the tool waited for (ms: the hooks case less hooks-base, phase by phase from the medians above, over the\n")
	b.WriteString("hooks run in the three operations; the hook's own run time is in the phase that waited for it).\n\n")
	b.WriteString("| tool | " + strings.Join(shown, " | ") + " |\n|---|" + strings.Repeat("---|", len(shown)) + "\n")
	for _, h := range hooks {
		if h.PhaseMS == nil {
			continue
		}
		cells := []string{toolLabel(h.Tool)}
		for _, p := range shown {
			cells = append(cells, fmt.Sprintf("%.0f", h.PhaseMS[p]))
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// shownPhases are the phases, in their order, that some tool spent time in (spent says).
func shownPhases(spent func(phase string) bool) []string {
	var out []string
	for _, p := range phases {
		if spent(p) {
			out = append(out, p)
		}
	}
	return out
}
