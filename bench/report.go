package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// spread is the median and range of a set of measurements.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

func (s spread) valid() bool { return s.N > 0 }

// toolStats summarizes one tool's runs of one operation of one case.
type toolStats struct {
	// Seconds is, for uninstall, until the release's last object was gone; ToolSeconds until
	// the tool returned.
	Seconds     spread `json:"seconds"`
	ToolSeconds spread `json:"tool_seconds"`
	PeakRSSMiB  spread `json:"peak_rss_mib"`
	// PeakAnonMiB is the most the tool allocated (anonymous pages), sampled every 2 ms: its peak
	// without the pages of its binary.
	PeakAnonMiB spread `json:"peak_anon_mib"`
	// CPUMS is the processor time the tool took, user and system (ms).
	CPUMS           spread `json:"cpu_ms"`
	APIRequests     spread `json:"api_requests"`
	DeletionLatency spread `json:"deletion_latency_ms"`
	// SplitMS is the median of each phase of the time until the tool returned (splitTime).
	SplitMS  map[string]float64 `json:"split_ms,omitempty"`
	Failures int                `json:"failures"`
}

// row summarizes one operation of one case.
type row struct {
	Case  string               `json:"case"`
	Op    string               `json:"op"`
	Tools map[string]toolStats `json:"tools"`
	// BerthOverHelm, BerthOverHelmQPS and BerthOverFloor are wall-time ratios computed round by
	// round: berth over Helm at its defaults, over Helm at berth's rate limit, over the floor.
	BerthOverHelm    spread `json:"berth_over_helm"`
	BerthOverHelmQPS spread `json:"berth_over_helm_qps"`
	BerthOverFloor   spread `json:"berth_over_floor"`
}

// berthOver is the row's ratio of berth's wall time over tool's.
func (r row) berthOver(tool string) (spread, bool) {
	switch tool {
	case "helm":
		return r.BerthOverHelm, true
	case helmAtBerthLimits:
		return r.BerthOverHelmQPS, true
	case "floor":
		return r.BerthOverFloor, true
	}
	return spread{}, false
}

// hookOverhead is a tool's cost per hook beyond the hook's simulated run time: the difference
// between the hooks case and the same chart without hooks, divided by the number of hooks run.
type hookOverhead struct {
	Tool string `json:"tool"`
	// PerOpMS is by operation; AllMS over the three operations together. An operation some run
	// of which failed is left out.
	PerOpMS map[string]float64 `json:"per_op_ms"`
	AllMS   *float64           `json:"all_ms,omitempty"`
	// PhaseMS splits AllMS's hooks by what the tool waited for (splitTime): the difference
	// between the two cases' medians of each phase, over the operations together, per hook run.
	// The hook's simulated run time is in it, under the phase that waited for it.
	PhaseMS map[string]float64 `json:"phase_ms,omitempty"`
}

// goal is one of the targets the harness measures berth against.
type goal struct {
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

type summary struct {
	Rows  []row          `json:"rows"`
	Hooks []hookOverhead `json:"hook_overhead"`
	Goals []goal         `json:"goals"`
}

// measured returns the counted samples of a case, operation and tool.
func measured(samples []sample, c, op, tool string) (ok, failed []sample) {
	for _, s := range samples {
		if s.Round == 0 || s.Case != c || s.Op != op || s.Tool != tool {
			continue
		}
		if s.Error != "" {
			failed = append(failed, s)
		} else {
			ok = append(ok, s)
		}
	}
	return ok, failed
}

func summarize(samples []sample, cases []string, tools []string, hookCounts map[string]int, hookRunTime time.Duration) summary {
	var out summary
	for _, c := range cases {
		for _, op := range ops {
			r := row{Case: c, Op: op, Tools: map[string]toolStats{}}
			for _, tool := range tools {
				ok, failed := measured(samples, c, op, tool)
				var secs, toolSecs, rss, anon, cpu, reqs, lat []float64
				for _, s := range ok {
					secs = append(secs, s.Seconds)
					toolSecs = append(toolSecs, s.ToolSeconds)
					rss = append(rss, float64(s.PeakRSSBytes)/(1<<20))
					if s.PeakAnonBytes > 0 {
						anon = append(anon, float64(s.PeakAnonBytes)/(1<<20))
					}
					if s.CPUMS > 0 {
						cpu = append(cpu, s.CPUMS)
					}
					reqs = append(reqs, float64(s.APIRequests))
					if s.DeletionLatencyMS != nil {
						lat = append(lat, *s.DeletionLatencyMS)
					}
				}
				r.Tools[tool] = toolStats{Seconds: spreadOf(secs), ToolSeconds: spreadOf(toolSecs), PeakRSSMiB: spreadOf(rss), PeakAnonMiB: spreadOf(anon), CPUMS: spreadOf(cpu), APIRequests: spreadOf(reqs),
					DeletionLatency: spreadOf(lat), SplitMS: medianSplit(ok), Failures: len(failed)}
			}
			r.BerthOverHelm = pairwise(samples, c, op, "berth", "helm")
			r.BerthOverHelmQPS = pairwise(samples, c, op, "berth", helmAtBerthLimits)
			r.BerthOverFloor = pairwise(samples, c, op, "berth", "floor")
			out.Rows = append(out.Rows, r)
		}
	}
	if slices.Contains(cases, "hooks") && slices.Contains(cases, "hooks-base") {
		for _, tool := range tools {
			out.Hooks = append(out.Hooks, overheadOf(out.Rows, tool, hookCounts, hookRunTime))
		}
	}
	out.Goals = goals(out, samples)
	return out
}

// pairwise is the ratio a/b of wall times, taken round by round.
func pairwise(samples []sample, c, op, a, b string) spread {
	as, _ := measured(samples, c, op, a)
	bs, _ := measured(samples, c, op, b)
	byRound := map[int]float64{}
	for _, s := range bs {
		byRound[s.Round] = s.Seconds
	}
	var ratios []float64
	for _, s := range as {
		if d, ok := byRound[s.Round]; ok && d > 0 {
			ratios = append(ratios, s.Seconds/d)
		}
	}
	return spreadOf(ratios)
}

func findRow(rows []row, c, op string) (row, bool) {
	for _, r := range rows {
		if r.Case == c && r.Op == op {
			return r, true
		}
	}
	return row{}, false
}

func overheadOf(rows []row, tool string, counts map[string]int, run time.Duration) hookOverhead {
	h := hookOverhead{Tool: tool, PerOpMS: map[string]float64{}}
	var with, without float64
	total := 0
	for _, op := range ops {
		rh, ok1 := findRow(rows, "hooks", op)
		rb, ok2 := findRow(rows, "hooks-base", op)
		n := counts[op]
		if !ok1 || !ok2 || n == 0 {
			continue
		}
		a, b := rh.Tools[tool].Seconds, rb.Tools[tool].Seconds
		if !a.valid() || !b.valid() {
			continue
		}
		h.PerOpMS[op] = ((a.Median-b.Median)/float64(n) - run.Seconds()) * 1000
		with += a.Median
		without += b.Median
		total += n
	}
	if total > 0 {
		all := ((with-without)/float64(total) - run.Seconds()) * 1000
		h.AllMS = &all
		h.PhaseMS = perHookPhases(rows, tool, counts, total)
	}
	return h
}

// perHookPhases is, phase by phase, the time the hooks case spent beyond hooks-base in all the
// operations both measured, over the total hooks run in them; nil when a case has no split.
func perHookPhases(rows []row, tool string, counts map[string]int, total int) map[string]float64 {
	out := map[string]float64{}
	for _, op := range ops {
		rh, ok1 := findRow(rows, "hooks", op)
		rb, ok2 := findRow(rows, "hooks-base", op)
		if !ok1 || !ok2 || counts[op] == 0 || !rh.Tools[tool].Seconds.valid() || !rb.Tools[tool].Seconds.valid() {
			continue
		}
		with, without := rh.Tools[tool].SplitMS, rb.Tools[tool].SplitMS
		if with == nil || without == nil {
			return nil
		}
		for _, p := range phases {
			out[p] += (with[p] - without[p]) / float64(total)
		}
	}
	return out
}

// largeCases are the cases the speed targets hold for.
var largeCases = []string{"large", "large-flat"}

// Speed targets of the large cases: install, upgrade and the no-op upgrade at most this much of
// Helm's time; install at most installOverFloor of the floor's, upgrade and the no-op upgrade
// applyOverFloor (the floor's no-op applies every object again); uninstall (until the last
// object is gone) at most uninstallOverFloor.
const (
	applyOverHelm      = 0.5
	installOverFloor   = 1.1
	applyOverFloor     = 1.05
	uninstallOverFloor = 1.0
	// everyOverFloor bounds every operation of every case against the floor's.
	everyOverFloor = 1.2
	// orderedOverFloor bounds berth's --wait=ordered against the floor applying the same
	// batches one after another (the ordered case).
	orderedOverFloor = 1.1
)

// The record cases: recordCase1's record is the largest Helm can store, and on it berth is never
// slower than Helm (recordOverHelm); recordCase2's no Secret holds, and berth must release it,
// its install within hugeInstallOverFloor of the floor's time and hugeInstallMiB of memory.
const (
	recordCase1, recordCase2 = "large-record", "huge-record"
	recordOverHelm           = 1.0
	hugeInstallOverFloor     = 1.5
	hugeInstallMiB           = 200
)

func goals(s summary, samples []sample) []goal {
	var out []goal
	for _, c := range largeCases {
		for _, op := range ops {
			r, ok := findRow(s.Rows, c, op)
			if !ok {
				continue
			}
			if op == "uninstall" {
				out = append(out, goal{Goal: fmt.Sprintf("%s uninstall, until the last object is gone: berth within %.1fx of the client-go floor", c, uninstallOverFloor),
					Measured: ratioText(r.BerthOverFloor), Met: r.BerthOverFloor.valid() && r.BerthOverFloor.Median <= uninstallOverFloor})
				continue
			}
			overFloor := applyOverFloor
			if op == "install" {
				overFloor = installOverFloor
			}
			out = append(out,
				goal{Goal: fmt.Sprintf("%s %s --wait: berth at most %.1fx Helm v4", c, op, applyOverHelm),
					Measured: ratioText(r.BerthOverHelm), Met: r.BerthOverHelm.valid() && r.BerthOverHelm.Median <= applyOverHelm},
				goal{Goal: fmt.Sprintf("%s %s --wait: berth within %.2fx of the client-go floor", c, op, overFloor),
					Measured: ratioText(r.BerthOverFloor), Met: r.BerthOverFloor.valid() && r.BerthOverFloor.Median <= overFloor})
		}
	}
	out = append(out, everyOperationGoals(s)...)
	for _, op := range ops {
		if r, ok := findRow(s.Rows, "ordered", op); ok {
			out = append(out, goal{Goal: fmt.Sprintf("ordered %s --wait=ordered: berth within %.1fx of the floor applying the same batches", op, orderedOverFloor),
				Measured: ratioText(r.BerthOverFloor), Met: r.BerthOverFloor.valid() && r.BerthOverFloor.Median <= orderedOverFloor})
		}
	}
	for _, op := range ops {
		if r, ok := findRow(s.Rows, recordCase1, op); ok {
			out = append(out, goal{Goal: fmt.Sprintf("%s %s: berth at most %.1fx Helm v4", recordCase1, op, recordOverHelm),
				Measured: ratioText(r.BerthOverHelm), Met: r.BerthOverHelm.valid() && r.BerthOverHelm.Median <= recordOverHelm})
		}
	}
	if _, ok := findRow(s.Rows, recordCase2, "install"); ok {
		g := goal{Goal: recordCase2 + ": berth installs, upgrades and uninstalls it (Helm v4 cannot install it)", Met: true}
		var failed []string
		for _, op := range ops {
			r, _ := findRow(s.Rows, recordCase2, op)
			if st := r.Tools["berth"]; st.Failures > 0 || !st.Seconds.valid() {
				failed = append(failed, op)
				g.Met = false
			}
		}
		g.Measured = "every operation in every round"
		if !g.Met {
			g.Measured = "failed or not run: " + strings.Join(failed, ", ")
		}
		out = append(out, g)
		if r, _ := findRow(s.Rows, recordCase2, "install"); r.BerthOverFloor.valid() && r.Tools["berth"].PeakRSSMiB.valid() {
			ratio, rss := r.BerthOverFloor.Median, r.Tools["berth"].PeakRSSMiB.Median
			out = append(out, goal{
				Goal:     fmt.Sprintf("%s install: berth within %.1fx of the client-go floor, at most %d MiB peak memory", recordCase2, hugeInstallOverFloor, hugeInstallMiB),
				Measured: fmt.Sprintf("%.2fx, %.0f MiB", ratio, rss), Met: ratio <= hugeInstallOverFloor && rss <= hugeInstallMiB})
		}
	}
	for _, h := range s.Hooks {
		if h.Tool == "berth" && h.AllMS != nil {
			out = append(out, goal{Goal: "hooks: per-hook overhead under 100 ms (median)",
				Measured: fmt.Sprintf("%.0f ms", *h.AllMS), Met: *h.AllMS < 100})
		}
	}
	var lat []float64
	for _, sm := range samples {
		if sm.Round > 0 && sm.Tool == "berth" && sm.DeletionLatencyMS != nil {
			lat = append(lat, *sm.DeletionLatencyMS)
		}
	}
	if l := spreadOf(lat); l.valid() {
		out = append(out, goal{Goal: "deletion latency under 100 ms (median of every berth uninstall)",
			Measured: fmt.Sprintf("%.0f ms (%.0f–%.0f)", l.Median, l.Min, l.Max), Met: l.Median < 100})
	}
	worst, where := worstOverHelm(s.Rows, func(t toolStats) spread { return t.PeakRSSMiB })
	if where != "" {
		measured := fmt.Sprintf("at most %.2fx Helm's (%s)", worst, where)
		if anon, at := worstOverHelm(s.Rows, func(t toolStats) spread { return t.PeakAnonMiB }); at != "" {
			measured += fmt.Sprintf("; what it allocated, at most %.2fx Helm's (%s)", anon, at)
		}
		out = append(out, goal{Goal: "peak memory no more than Helm v4's (every case and operation)",
			Measured: measured, Met: worst <= 1})
	}
	return out
}

// everyOperationGoals hold every operation of each case to everyOverFloor of the floor's time,
// a goal a case, measured by each operation's median ratio.
func everyOperationGoals(s summary) []goal {
	var out []goal
	var cases []string
	for _, r := range s.Rows {
		if !slices.Contains(cases, r.Case) {
			cases = append(cases, r.Case)
		}
	}
	for _, c := range cases {
		var parts []string
		met, any := true, false
		for _, op := range ops {
			r, ok := findRow(s.Rows, c, op)
			if !ok || !r.BerthOverFloor.valid() {
				continue
			}
			any = true
			parts = append(parts, fmt.Sprintf("%s %.2fx", op, r.BerthOverFloor.Median))
			met = met && r.BerthOverFloor.Median <= everyOverFloor
		}
		if any {
			out = append(out, goal{Goal: fmt.Sprintf("%s: every operation within %.1fx of the client-go floor", c, everyOverFloor),
				Measured: strings.Join(parts, ", "), Met: met})
		}
	}
	return out
}

// worstOverHelm is the largest ratio of berth's median of what of reads over Helm's, and the
// case and operation where it is; "" when no row has both.
func worstOverHelm(rows []row, of func(toolStats) spread) (float64, string) {
	worst, where := 0.0, ""
	for _, r := range rows {
		b, h := of(r.Tools["berth"]), of(r.Tools["helm"])
		if !b.valid() || !h.valid() || h.Median == 0 {
			continue
		}
		if ratio := b.Median / h.Median; ratio > worst {
			worst, where = ratio, r.Case+" "+r.Op
		}
	}
	return worst, where
}

func msText(ms map[string]float64, op string) string {
	v, ok := ms[op]
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", v)
}

func ratioText(s spread) string {
	if !s.valid() {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx (%.2f–%.2f)", s.Median, s.Min, s.Max)
}

func secondsText(s spread) string {
	if !s.valid() {
		return "n/a"
	}
	return fmt.Sprintf("%.2f s (%.2f–%.2f)", s.Median, s.Min, s.Max)
}

func secondsShort(s spread) string {
	if !s.valid() {
		return "–"
	}
	return fmt.Sprintf("%.2f", s.Median)
}

func intText(s spread) string {
	if !s.valid() {
		return "–"
	}
	return fmt.Sprintf("%.0f", s.Median)
}

// markdown renders the summary as tables, a column for each of tools and a ratio column for each
// tool berth is compared with.
func (s summary) markdown(tools []string) string {
	var b strings.Builder
	labels := make([]string, len(tools))
	var versus []string
	for i, t := range tools {
		labels[i] = toolLabel(t)
		if _, ok := (row{}).berthOver(t); ok {
			versus = append(versus, t)
		}
	}
	b.WriteString("Wall time: median (min–max) of the counted rounds; uninstall until the release's last object was gone (or the tool returned, if later); ratios are taken round by round.\n\n")
	b.WriteString("| case | op | " + strings.Join(labels, " | "))
	for _, t := range versus {
		b.WriteString(" | berth/" + toolLabel(t))
	}
	b.WriteString(" |\n|---|---|" + strings.Repeat("---|", len(tools)+len(versus)) + "\n")
	for _, r := range s.Rows {
		cells := []string{r.Case, r.Op}
		for _, t := range tools {
			cell := secondsText(r.Tools[t].Seconds)
			if f := r.Tools[t].Failures; f > 0 {
				cell += fmt.Sprintf(" (%d failed)", f)
			}
			cells = append(cells, cell)
		}
		for _, t := range versus {
			ratio, _ := r.berthOver(t)
			cells = append(cells, ratioText(ratio))
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString("\nPeak resident memory (MiB, median), of it the most the tool allocated (anonymous memory, sampled every 2 ms;\n")
	b.WriteString("the rest is pages of its binary), processor time (ms, median, user and system: the API server shares the processors),\n")
	b.WriteString("and API requests (median count, from the API server's audit log);\n")
	b.WriteString("for uninstall, when the tool returned (s, median) and its deletion latency: the tool's exit minus the last object's\n")
	b.WriteString("disappearance seen by the harness's watch (ms, median; negative: the tool returned before its objects were gone).\n\n")
	names := strings.Join(labels, " / ")
	b.WriteString("| case | op | peak RSS " + names + " | allocated " + names + " | CPU ms " + names + " | requests " + names + " | returned " + names + " | deletion latency " + names + " |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range s.Rows {
		var rss, anon, cpu, reqs, ret, lat []string
		for _, t := range tools {
			rss = append(rss, intText(r.Tools[t].PeakRSSMiB))
			anon = append(anon, intText(r.Tools[t].PeakAnonMiB))
			cpu = append(cpu, intText(r.Tools[t].CPUMS))
			reqs = append(reqs, intText(r.Tools[t].APIRequests))
			ret = append(ret, secondsShort(r.Tools[t].ToolSeconds))
			lat = append(lat, intText(r.Tools[t].DeletionLatency))
		}
		retText, latText := strings.Join(ret, " / "), strings.Join(lat, " / ")
		if r.Op != "uninstall" {
			retText, latText = "", ""
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Case, r.Op, strings.Join(rss, " / "), strings.Join(anon, " / "), strings.Join(cpu, " / "), strings.Join(reqs, " / "), retText, latText)
	}
	if split := s.splitText(tools); split != "" {
		b.WriteString("\n" + split)
	}
	if len(s.Hooks) > 0 {
		b.WriteString("\nPer-hook overhead: (hooks − hooks-base) / hooks run − the hook's simulated run time (ms, from medians).\n\n")
		b.WriteString("| tool | " + strings.Join(ops, " | ") + " | all |\n|---|" + strings.Repeat("---|", len(ops)+1) + "\n")
		hooks := slices.Clone(s.Hooks)
		slices.SortStableFunc(hooks, func(a, b hookOverhead) int {
			return cmp.Compare(slices.Index(tools, a.Tool), slices.Index(tools, b.Tool))
		})
		for _, h := range hooks {
			cells := []string{toolLabel(h.Tool)}
			for _, op := range ops {
				cells = append(cells, msText(h.PerOpMS, op))
			}
			all := "n/a"
			if h.AllMS != nil {
				all = fmt.Sprintf("%.0f", *h.AllMS)
			}
			b.WriteString("| " + strings.Join(append(cells, all), " | ") + " |\n")
		}
		b.WriteString(perHookPhaseText(hooks))
	}
	if len(s.Goals) > 0 {
		b.WriteString("\n| goal | measured | met |\n|---|---|---|\n")
		for _, g := range s.Goals {
			met := "no"
			if g.Met {
				met = "yes"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", g.Goal, g.Measured, met)
		}
	}
	return b.String()
}
