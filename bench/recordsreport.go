package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/berthdev/berth/internal/release"
)

const recordsResultsStart, recordsResultsEnd = "<!-- records results: written by berth-bench records -->", "<!-- end of records results -->"

// goalRecordChart is the chart whose record write and read berth must do in no more time than
// Helm's driver: the largest that Helm can store.
const goalRecordChart = "large-record"

func (r recordsResults) write(cfg recordsConfig) error {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, "records.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	md := r.markdown()
	if err := os.WriteFile(filepath.Join(cfg.out, "records.md"), []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Println()
	fmt.Print(md)
	if cfg.readme != "" {
		return replaceBetween(cfg.readme, recordsResultsStart, recordsResultsEnd, md)
	}
	return nil
}

// recordSpread is the spread of the counted samples of a tool's op on a record, and the first
// error of any sample.
func (rc recordCase) spread(tool, op string, value func(recordSample) float64) (spread, string) {
	return samplesSpread(rc.Samples, func(s recordSample) bool { return s.Tool == tool && s.Op == op },
		func(s recordSample) (int, string) { return s.Round, s.Error }, value)
}

func (lc listCase) spread(tool string, value func(listSample) float64) (spread, string) {
	return samplesSpread(lc.Samples, func(s listSample) bool { return s.Tool == tool },
		func(s listSample) (int, string) { return s.Round, s.Error }, value)
}

// samplesSpread is the spread of value over the samples keep takes that were counted (round
// after the warm-up) and did not fail, and the first error of those it takes.
func samplesSpread[S any](samples []S, keep func(S) bool, outcome func(S) (round int, err string), value func(S) float64) (spread, string) {
	var xs []float64
	failed := ""
	for _, s := range samples {
		if !keep(s) {
			continue
		}
		round, err := outcome(s)
		if err != "" {
			if failed == "" {
				failed = err
			}
			continue
		}
		if round > 0 {
			xs = append(xs, value(s))
		}
	}
	return spreadOf(xs), failed
}

// ratio is berth's time over Helm's for op, taken round by round, as "run" takes its ratios.
func (rc recordCase) ratio(op string) spread {
	helm := map[int]float64{}
	for _, s := range rc.Samples {
		if s.Tool == "helm" && s.Op == op && s.Round > 0 && s.Error == "" && s.Seconds > 0 {
			helm[s.Round] = s.Seconds
		}
	}
	var xs []float64
	for _, s := range rc.Samples {
		if h, ok := helm[s.Round]; ok && s.Tool == "berth" && s.Op == op && s.Error == "" {
			xs = append(xs, s.Seconds/h)
		}
	}
	return spreadOf(xs)
}

// ratio is berth's list time over Helm's, taken round by round.
func (lc listCase) ratio() spread {
	helm := map[int]float64{}
	for _, s := range lc.Samples {
		if s.Tool == "helm" && s.Round > 0 && s.Error == "" && s.Seconds > 0 {
			helm[s.Round] = s.Seconds
		}
	}
	var xs []float64
	for _, s := range lc.Samples {
		if h, ok := helm[s.Round]; ok && s.Tool == "berth" && s.Error == "" {
			xs = append(xs, s.Seconds/h)
		}
	}
	return spreadOf(xs)
}

func seconds(s recordSample) float64   { return s.Seconds }
func sent(s recordSample) float64      { return float64(s.BytesSent) }
func received(s recordSample) float64  { return float64(s.BytesReceived) }
func listSeconds(s listSample) float64 { return s.Seconds }
func listRSS(s listSample) float64     { return float64(s.PeakRSSBytes) / (1 << 20) }
func listRequests(s listSample) float64 {
	return float64(s.APIRequests)
}

func msSpread(s spread) string {
	if !s.valid() {
		return "n/a"
	}
	return fmt.Sprintf("%.0f ms (%.0f–%.0f)", s.Median*1000, s.Min*1000, s.Max*1000)
}

func bytesText(s spread) string {
	if !s.valid() {
		return "–"
	}
	return release.Bytes(int(s.Median))
}

// atMost is a goal that berth's time is at most Helm's: the median of the ratios taken round by
// round at most 1.
func atMost(name string, ratio spread, failedA, failedB string) goal {
	g := goal{Goal: name}
	switch {
	case failedA != "":
		g.Measured = "berth failed: " + firstLineOf(failedA)
	case failedB != "":
		g.Measured = "Helm failed: " + firstLineOf(failedB)
	default:
		g.Measured = ratioText(ratio)
		g.Met = ratio.valid() && ratio.Median <= 1
	}
	return g
}

// lessMemory is a goal that berth's median peak memory a is at most Helm's b.
func lessMemory(name string, a, b spread, failedA, failedB string) goal {
	g := goal{Goal: name}
	switch {
	case failedA != "":
		g.Measured = "berth failed: " + firstLineOf(failedA)
	case failedB != "":
		g.Measured = "Helm failed: " + firstLineOf(failedB)
	case !a.valid() || !b.valid():
		g.Measured = "n/a"
	default:
		g.Measured = fmt.Sprintf("%.0f MiB against %.0f MiB (%.2fx)", a.Median, b.Median, a.Median/b.Median)
		g.Met = a.Median <= b.Median
	}
	return g
}

func (r recordsResults) goals() []goal {
	var out []goal
	for _, rc := range r.Records {
		if rc.Chart == goalRecordChart {
			for _, op := range []string{"write", "read"} {
				_, fb := rc.spread("berth", op, seconds)
				_, fh := rc.spread("helm", op, seconds)
				out = append(out, atMost(fmt.Sprintf("%s record %s: berth at most 1.0x Helm v4's time", rc.Chart, op), rc.ratio(op), fb, fh))
			}
			continue
		}
		_, fw := rc.spread("berth", "write", seconds)
		_, fr := rc.spread("berth", "read", seconds)
		g := goal{Goal: fmt.Sprintf("%s (%s as Helm writes it): berth writes the record and reads it back", rc.Chart, release.Bytes(rc.HelmSize)), Met: fw == "" && fr == ""}
		g.Measured = fmt.Sprintf("%d Secrets, %s", rc.Objects["berth"], release.Bytes(rc.Stored["berth"]))
		if !g.Met {
			g.Measured = "failed: " + firstLineOf(fw+fr)
		}
		out = append(out, g)
	}
	lc := r.List
	if len(lc.Samples) > 0 {
		what := fmt.Sprintf("list -A of %d releases of %s, %d revisions each", lc.Releases, listChart, lc.Revisions)
		_, fb := lc.spread("berth", listSeconds)
		_, fh := lc.spread("helm", listSeconds)
		out = append(out, atMost(what+": berth at most 1.0x Helm v4's time", lc.ratio(), fb, fh))
		b, fb := lc.spread("berth", listRSS)
		h, fh := lc.spread("helm", listRSS)
		out = append(out, lessMemory(what+": berth's peak memory at most Helm v4's (median)", b, h, fb, fh))
	}
	return out
}

func (r recordsResults) markdown() string {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "Measured %s on %s (%d CPUs, %s, %s), %s; %s, Helm %s; a devcluster with kube-controller-manager's defaults; the tools' order alternating each round, after a warm-up round that is not counted.\n\n",
		r.Started.UTC().Format("2006-01-02"), m.CPU, m.CPUs, m.Memory, m.Kernel, m.Go, m.Berth, m.Helm)
	fmt.Fprintf(&b, "Writing and reading one revision's record, in the harness's process: berth's store (`release.NewSecretStore`) and Helm's Secrets driver, on the same client, %d counted rounds; time median (min–max); bytes are the request and answer bodies (median).\n\n", r.Rounds)
	b.WriteString("| chart | record as Helm writes it | tool | stored: Secrets, data | write | sent | read | received |\n|---|---|---|---|---|---|---|---|\n")
	var ratios []string
	for _, rc := range r.Records {
		for _, tool := range recordTools {
			w, fw := rc.spread(tool, "write", seconds)
			if fw != "" {
				fmt.Fprintf(&b, "| %s | %s | %s | failed: %s | | | | |\n", rc.Chart, release.Bytes(rc.HelmSize), toolName(tool), firstLineOf(fw))
				continue
			}
			rd, fr := rc.spread(tool, "read", seconds)
			s, _ := rc.spread(tool, "write", sent)
			rv, _ := rc.spread(tool, "read", received)
			readText := msSpread(rd)
			if fr != "" {
				readText = "failed: " + firstLineOf(fr)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d, %s | %s | %s | %s | %s |\n", rc.Chart, release.Bytes(rc.HelmSize), toolName(tool),
				rc.Objects[tool], release.Bytes(rc.Stored[tool]), msSpread(w), bytesText(s), readText, bytesText(rv))
		}
		if w, r := rc.ratio("write"), rc.ratio("read"); w.valid() && r.valid() {
			ratios = append(ratios, fmt.Sprintf("%s: write %s, read %s", rc.Chart, ratioText(w), ratioText(r)))
		}
	}
	if len(ratios) > 0 {
		b.WriteString("\nberth/Helm, round by round: " + strings.Join(ratios, "; ") + ".\n")
	}
	lc := r.List
	if len(lc.Samples) > 0 {
		fmt.Fprintf(&b, "\n`list -A` over %d releases of `%s` in %d namespaces, %d revisions each (the newest deployed): %d records, %s of data, written through berth's store in %.0f s. %d counted runs of each; time median (min–max), peak RSS and API requests median.\n\n",
			lc.Releases, listChart, lc.Namespaces, lc.Revisions, lc.Releases*lc.Revisions, release.Bytes(int(lc.RecordBytes)), lc.CreateSeconds, r.Lists)
		b.WriteString("| tool | list -A | peak RSS (MiB) | API requests |\n|---|---|---|---|\n")
		for _, tool := range listTools {
			t, f := lc.spread(tool, listSeconds)
			if f != "" && !t.valid() {
				fmt.Fprintf(&b, "| %s | failed: %s | | |\n", toolName(tool), firstLineOf(f))
				continue
			}
			rss, _ := lc.spread(tool, listRSS)
			reqs, _ := lc.spread(tool, listRequests)
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", toolName(tool), secondsText(t), intText(rss), intText(reqs))
		}
		if ratio := lc.ratio(); ratio.valid() {
			b.WriteString("\nberth/Helm, round by round: " + ratioText(ratio) + ".\n")
		}
	}
	if len(r.Goals) > 0 {
		b.WriteString("\n| goal | measured | met |\n|---|---|---|\n")
		for _, g := range r.Goals {
			met := "no"
			if g.Met {
				met = "yes"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", g.Goal, g.Measured, met)
		}
	}
	return b.String()
}

func toolName(tool string) string {
	if tool == "helm" {
		return "Helm v4"
	}
	return tool
}
