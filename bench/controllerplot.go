package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The controller results' plot: one small panel a measure, each measure's growth against the
// number of Releases (a log scale), one line a kind of run (one controller, N shards, a remote
// cluster). Its output depends on the results alone: the same results draw the same bytes.

// Plot geometry, in pixels: two panels a row, 900 wide.
const (
	plotWidth     = 900
	plotColumns   = 2
	panelWidth    = plotWidth / plotColumns
	panelTop      = 34 // the panel's title above the area
	areaLeft      = 78 // tick labels and the y axis's name, left of the area
	areaRight     = 22
	areaHeight    = 190
	belowArea     = 44 // x tick labels and the x axis's name
	legendRow     = 17
	plotHeaderTop = 58
)

// plotPalette colours the kinds of run in the order they appear: one controller first.
var plotPalette = []string{"#1c5fb8", "#d9480f", "#2b8a3e", "#7048e8", "#c2255c", "#0b7285", "#5c940d", "#495057"}

// plotPoint is one run's figure: Releases on the x axis, the measure on the y axis.
type plotPoint struct {
	Releases int
	Value    float64
}

// plotLine is one line of a panel: a kind of run, or one figure of it (the cluster's CPU, the
// largest shard), drawn dashed when Dashed.
type plotLine struct {
	Name   string
	Color  string
	Dashed bool
	Points []plotPoint
}

// plotPanel is one measure.
type plotPanel struct {
	Title, Unit string
	Lines       []plotLine
}

// plotGroup is a kind of run: the runs one line joins, those of the same shape at the same
// settings.
type plotGroup struct {
	name  string
	color string
	runs  []controllerRun
	fleet []fleetRun
}

// readControllerResults reads a results file written by "controller".
func readControllerResults(path string) (controllerResults, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return controllerResults{}, err
	}
	r, err := parseControllerResults(data)
	if err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// parseControllerResults parses the JSON of a controller results file.
func parseControllerResults(data []byte) (controllerResults, error) {
	var r controllerResults
	if err := json.Unmarshal(data, &r); err != nil {
		return r, err
	}
	if len(r.Runs) == 0 && len(r.Fleet) == 0 {
		return r, errors.New("no runs in the results")
	}
	return r, nil
}

// runPlot is "berth-bench plot RESULTS.json [OUT.svg]": the plot of results already written,
// without running anything; OUT defaults to the results' path with .svg.
func runPlot(args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return errors.New("plot: want a results file (controller.json) and optionally the SVG to write")
	}
	in := args[0]
	out := strings.TrimSuffix(in, filepath.Ext(in)) + ".svg"
	if len(args) == 2 {
		out = args[1]
	}
	r, err := readControllerResults(in)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, controllerSVG(r), 0o644); err != nil {
		return err
	}
	fmt.Println(out)
	return nil
}

// plotGroups sorts the runs into kinds: the single controller's first, then the fleet's, each
// in the order of its first run. A kind's name says the rate limit and the interval when the
// results hold more than one, and the hung Releases when its runs had them.
func plotGroups(r controllerResults) []*plotGroup {
	rates, intervals := map[int]bool{}, map[string]bool{}
	for _, run := range r.Runs {
		rates[run.ControllerQPS], intervals[run.Interval] = true, true
	}
	for _, run := range r.Fleet {
		rates[run.ControllerQPS], intervals[run.Interval] = true, true
	}
	suffix := func(qps, hung int, interval string) string {
		s := ""
		if len(rates) > 1 {
			s += fmt.Sprintf(" at %d/s", qps)
		}
		if hung > 0 {
			s += fmt.Sprintf(", %d hung", hung)
		}
		if len(intervals) > 1 && interval != "" {
			s += ", interval " + interval
		}
		return s
	}
	var groups []*plotGroup
	byName := map[string]*plotGroup{}
	group := func(name string) *plotGroup {
		if g, ok := byName[name]; ok {
			return g
		}
		g := &plotGroup{name: name, color: plotPalette[len(groups)%len(plotPalette)]}
		byName[name] = g
		groups = append(groups, g)
		return g
	}
	for _, run := range r.Runs {
		g := group("one controller" + suffix(run.ControllerQPS, run.Hung, run.Interval))
		g.runs = append(g.runs, run)
	}
	for _, run := range r.Fleet {
		name := fleetRunName(run)
		if run.Kind != fleetRemote && run.Kind != fleetShards {
			name = run.Kind
		}
		g := group(name + suffix(run.ControllerQPS, 0, run.Interval))
		g.fleet = append(g.fleet, run)
	}
	return groups
}

// plotPanels are the plot's measures, from the runs that reached Ready; a failed run has no
// point.
func plotPanels(r controllerResults) []plotPanel {
	ready := plotPanel{Title: "Time until all Ready", Unit: "seconds"}
	memory := plotPanel{Title: "Controller peak RSS at Ready", Unit: "MiB"}
	requests := plotPanel{Title: "API requests until Ready, per Release", Unit: "requests"}
	cpu := plotPanel{Title: "CPU until Ready", Unit: "CPU seconds"}
	for _, g := range plotGroups(r) {
		solid := func(name string) plotLine { return plotLine{Name: name, Color: g.color} }
		dashed := func(name string) plotLine { return plotLine{Name: name, Color: g.color, Dashed: true} }
		rd, mem, req := solid(g.name), solid(g.name), solid(g.name)
		ctlCPU, clusterCPU := solid(g.name+": controller"), dashed(g.name+": cluster")
		largest := dashed(g.name + ": largest shard")
		for _, run := range g.runs {
			if run.ReadySeconds <= 0 {
				continue
			}
			n := run.Releases
			rd.add(n, run.ReadySeconds)
			mem.add(n, float64(run.PeakRSSReadyBytes)/(1<<20))
			if run.Requests > 0 {
				req.add(n, float64(run.Requests)/float64(n))
			}
			ctlCPU.add(n, run.CPUSecondsReady)
			clusterCPU.add(n, run.ClusterCPUSecondsReady)
		}
		shards := false
		for _, run := range g.fleet {
			if run.ReadySeconds <= 0 {
				continue
			}
			n := run.Releases
			var sum, most int64
			var cpuSum float64
			for _, c := range run.Controllers {
				sum += c.PeakRSSReadyBytes
				most = max(most, c.PeakRSSReadyBytes)
				cpuSum += c.CPUSecondsReady
			}
			rd.add(n, run.ReadySeconds)
			mem.add(n, float64(sum)/(1<<20))
			if run.Kind == fleetShards {
				shards = true
				largest.add(n, float64(most)/(1<<20))
			}
			if total := run.Requests + run.RemoteRequests; total > 0 {
				req.add(n, float64(total)/float64(n))
			}
			ctlCPU.add(n, cpuSum)
			clusterCPU.add(n, run.ClusterCPUSecondsReady)
		}
		if shards {
			mem.Name = g.name + ": sum of the shards"
			ctlCPU.Name = g.name + ": controllers (sum)"
		}
		ready.addLine(rd)
		memory.addLine(mem)
		memory.addLine(largest)
		requests.addLine(req)
		cpu.addLine(ctlCPU)
		cpu.addLine(clusterCPU)
	}
	return []plotPanel{ready, memory, requests, cpu}
}

// plotMinValue and plotMaxValue bound what the plot draws: a figure outside [plotMinValue,
// plotMaxValue] or a count of Releases outside [1, plotMaxValue] has no point.
const plotMinValue, plotMaxValue = 1e-6, 1e12

// add adds a point; one that the plot cannot draw (zero, negative, not finite, out of bounds)
// is left out.
func (l *plotLine) add(releases int, v float64) {
	if releases < 1 || releases > plotMaxValue || !(v >= plotMinValue) || v > plotMaxValue {
		return
	}
	l.Points = append(l.Points, plotPoint{Releases: releases, Value: v})
}

// addLine adds l, its points by number of Releases, when it has any.
func (p *plotPanel) addLine(l plotLine) {
	if len(l.Points) == 0 {
		return
	}
	slices.SortStableFunc(l.Points, func(a, b plotPoint) int { return a.Releases - b.Releases })
	p.Lines = append(p.Lines, l)
}

// plotScale maps a value onto an axis of length pixels; log or linear from zero.
type plotScale struct {
	log      bool
	lo, hi   float64
	pixels   float64
	ticks    []float64
	reversed bool // the y axis: pixels grow downwards
}

func (s plotScale) at(v float64) float64 {
	var f float64
	if s.log {
		f = (math.Log10(v) - math.Log10(s.lo)) / (math.Log10(s.hi) - math.Log10(s.lo))
	} else {
		f = (v - s.lo) / (s.hi - s.lo)
	}
	if s.reversed {
		f = 1 - f
	}
	return f * s.pixels
}

// logScale spans the decades around lo…hi, ticked at each decade, and at 2 and 5 times it
// when it spans at most three.
func logScale(lo, hi, pixels float64) plotScale {
	a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if b <= a {
		b = a + 1
	}
	s := plotScale{log: true, lo: math.Pow(10, a), hi: math.Pow(10, b), pixels: pixels}
	for e := a; e <= b; e++ {
		d := math.Pow(10, e)
		s.ticks = append(s.ticks, d)
		if b-a <= 3 && e < b {
			s.ticks = append(s.ticks, 2*d, 5*d)
		}
	}
	return s
}

// linearScale spans 0…hi rounded up to a step of 1, 2 or 5 times a power of ten, about five
// steps.
func linearScale(hi, pixels float64) plotScale {
	raw := hi / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if raw <= m*mag {
			step = m * mag
			break
		}
	}
	n := math.Ceil(hi / step)
	s := plotScale{lo: 0, hi: n * step, pixels: pixels}
	for i := 0.0; i <= n; i++ {
		s.ticks = append(s.ticks, i*step)
	}
	return s
}

// tickMarks are the x axis's minor ticks: 2…9 times each decade, unlabelled.
func (s plotScale) minorTicks() []float64 {
	var out []float64
	for d := s.lo; d < s.hi; d *= 10 {
		for m := 2.0; m <= 9; m++ {
			out = append(out, m*d)
		}
	}
	return out
}

// numberText is v for a tick label: thousands separated, at most two decimals, none trailing.
func numberText(v float64) string {
	if v >= 1000 || v == math.Trunc(v) {
		s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
		var b strings.Builder
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		return b.String()
	}
	if v < 0.01 {
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// valueText is a point's figure in its tooltip: three significant digits at most.
func valueText(v float64) string {
	if v >= 100 {
		return numberText(math.Round(v))
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// pixels formats a coordinate.
func pixels(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// controllerSVG draws the results' growth curves: a panel a measure, against the number of
// Releases on a log scale shared by every panel.
func controllerSVG(r controllerResults) []byte {
	panels := plotPanels(r)
	minN, maxN := math.Inf(1), math.Inf(-1)
	legend := 1
	for _, p := range panels {
		for _, l := range p.Lines {
			for _, pt := range l.Points {
				minN = min(minN, float64(pt.Releases))
				maxN = max(maxN, float64(pt.Releases))
			}
		}
		legend = max(legend, len(p.Lines))
	}
	if math.IsInf(minN, 0) {
		minN, maxN = 100, 10000
	}
	areaWidth := float64(panelWidth - areaLeft - areaRight)
	xs := logScale(minN, maxN, areaWidth)
	panelHeight := panelTop + areaHeight + belowArea + legend*legendRow + 12
	rows := (len(panels) + plotColumns - 1) / plotColumns
	failed := failedRunsText(r)
	footer := 0
	if failed != "" {
		footer = 24
	}
	header := plotHeaderTop
	if r.Label != "" {
		header += 18
	}
	height := header + rows*panelHeight + footer

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotWidth, height, plotWidth, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", plotWidth, height)
	fmt.Fprintf(&b, `<text x="12" y="22" font-size="16" font-weight="bold">berth controller: growth with the number of Releases</text>`+"\n")
	sub := 42
	if r.Label != "" {
		fmt.Fprintf(&b, `<text x="12" y="%d" font-weight="bold">%s</text>`+"\n", sub, esc(shortened(r.Label, 110)))
		sub += 18
	}
	fmt.Fprintf(&b, `<text x="12" y="%d" fill="#444444">%s</text>`+"\n", sub, esc(plotSubtitle(r)))
	for i, p := range panels {
		x0 := float64((i % plotColumns) * panelWidth)
		y0 := float64(header + (i/plotColumns)*panelHeight)
		drawPanel(&b, p, xs, x0, y0)
	}
	if failed != "" {
		fmt.Fprintf(&b, `<text x="12" y="%d" fill="#a61e1e">%s</text>`+"\n", height-8, esc(shortened(failed, 140)))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// plotSubtitle says what every run shared: the machine, the controllers' concurrency, the
// cluster's rate limit, the Releases' interval.
func plotSubtitle(r controllerResults) string {
	parts := []string{fmt.Sprintf("%d CPUs", r.Machine.CPUs), "chart " + r.chart()}
	var conc, qps []int
	var intervals []string
	for _, run := range r.Runs {
		conc, qps, intervals = append(conc, run.Concurrency), append(qps, run.ControllerQPS), append(intervals, run.Interval)
	}
	for _, run := range r.Fleet {
		conc, qps, intervals = append(conc, run.Concurrency), append(qps, run.ControllerQPS), append(intervals, run.Interval)
	}
	slices.Sort(conc)
	slices.Sort(qps)
	slices.Sort(intervals)
	conc, qps, intervals = slices.Compact(conc), slices.Compact(qps), slices.Compact(intervals)
	if len(conc) == 1 {
		parts = append(parts, fmt.Sprintf("--concurrency %d", conc[0]))
	}
	if len(qps) == 1 {
		parts = append(parts, fmt.Sprintf("cluster's rate limit %d/s", qps[0]))
	}
	if len(intervals) == 1 && intervals[0] != "" {
		parts = append(parts, "every Release at interval "+intervals[0])
	}
	parts = append(parts, "every Release created at once; hover a point for its figure")
	return strings.Join(parts, "; ")
}

// shortened is s cut to at most n characters, "…" ending one that was cut.
func shortened(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// failedRunsText names the runs that never reached Ready, which have no point; empty when none.
func failedRunsText(r controllerResults) string {
	var parts []string
	for _, g := range plotGroups(r) {
		for _, run := range g.runs {
			if run.ReadySeconds <= 0 {
				parts = append(parts, fmt.Sprintf("%d Releases, %s", run.Releases, g.name))
			}
		}
		for _, run := range g.fleet {
			if run.ReadySeconds <= 0 {
				parts = append(parts, fmt.Sprintf("%d Releases, %s", run.Releases, g.name))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Failed before Ready (no point): " + strings.Join(parts, "; ")
}

// drawPanel draws p with its top left corner at x0, y0.
func drawPanel(b *strings.Builder, p plotPanel, xs plotScale, x0, y0 float64) {
	left, top := x0+areaLeft, y0+panelTop
	fmt.Fprintf(b, `<g><text x="%s" y="%s" font-size="14" font-weight="bold">%s</text>`+"\n", pixels(left), pixels(y0+20), esc(p.Title))
	lo, hi := math.Inf(1), 0.0
	for _, l := range p.Lines {
		for _, pt := range l.Points {
			lo, hi = min(lo, pt.Value), max(hi, pt.Value)
		}
	}
	if len(p.Lines) == 0 {
		lo, hi = 1, 1
	}
	var ys plotScale
	unit := p.Unit
	if hi/lo > 20 {
		ys = logScale(lo, hi, areaHeight)
		unit += " (log scale)"
	} else {
		ys = linearScale(hi, areaHeight)
	}
	ys.reversed = true
	areaWidth := xs.pixels
	// The grid and the ticks.
	for _, t := range xs.minorTicks() {
		x := left + xs.at(t)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#f1f3f5"/>`+"\n", pixels(x), pixels(top), pixels(x), pixels(top+areaHeight))
	}
	for _, t := range xs.ticks {
		x := left + xs.at(t)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#dee2e6"/>`+"\n", pixels(x), pixels(top), pixels(x), pixels(top+areaHeight))
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", pixels(x), pixels(top+areaHeight+16), numberText(t))
	}
	for _, t := range ys.ticks {
		y := top + ys.at(t)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#dee2e6"/>`+"\n", pixels(left), pixels(y), pixels(left+areaWidth), pixels(y))
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="end">%s</text>`+"\n", pixels(left-6), pixels(y+4), numberText(t))
	}
	fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%d" fill="none" stroke="#868e96"/>`+"\n", pixels(left), pixels(top), pixels(areaWidth), areaHeight)
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle">Releases (log scale)</text>`+"\n", pixels(left+areaWidth/2), pixels(top+areaHeight+34))
	cy := top + areaHeight/2
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" transform="rotate(-90 %s %s)">%s</text>`+"\n", pixels(x0+16), pixels(cy), pixels(x0+16), pixels(cy), esc(unit))
	if len(p.Lines) == 0 {
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" fill="#868e96">not measured</text>`+"\n", pixels(left+areaWidth/2), pixels(cy))
	}
	// The lines, their points and the legend.
	for i, l := range p.Lines {
		dash := ""
		if l.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts []string
		for _, pt := range l.Points {
			pts = append(pts, pixels(left+xs.at(float64(pt.Releases)))+","+pixels(top+ys.at(pt.Value)))
		}
		fmt.Fprintf(b, `<polyline class="line" points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), l.Color, dash)
		for _, pt := range l.Points {
			x, y := left+xs.at(float64(pt.Releases)), top+ys.at(pt.Value)
			tip := fmt.Sprintf("%s, %s Releases: %s %s", l.Name, numberText(float64(pt.Releases)), valueText(pt.Value), p.Unit)
			fmt.Fprintf(b, "%s<title>%s</title></%s>\n", marker(l, "point", x, y), esc(tip), markerElement(l))
		}
		ly := top + areaHeight + belowArea + float64(i)*legendRow + 8
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`+"\n", pixels(left), pixels(ly), pixels(left+28), pixels(ly), l.Color, dash)
		fmt.Fprintf(b, "%s</%s>\n", marker(l, "key", left+14, ly), markerElement(l))
		fmt.Fprintf(b, `<text x="%s" y="%s">%s</text>`+"\n", pixels(left+36), pixels(ly+4), esc(l.Name))
	}
	b.WriteString("</g>\n")
}

// marker opens a point's mark, or the legend's (class "key"): a filled circle on a solid line,
// a hollow square on a dashed one.
func marker(l plotLine, class string, x, y float64) string {
	if l.Dashed {
		return fmt.Sprintf(`<rect class="%s" x="%s" y="%s" width="8" height="8" fill="#ffffff" stroke="%s" stroke-width="2">`, class, pixels(x-4), pixels(y-4), l.Color)
	}
	return fmt.Sprintf(`<circle class="%s" cx="%s" cy="%s" r="4" fill="%s">`, class, pixels(x), pixels(y), l.Color)
}

func markerElement(l plotLine) string {
	if l.Dashed {
		return "rect"
	}
	return "circle"
}
