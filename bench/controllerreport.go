package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

const controllerResultsStart, controllerResultsEnd = "<!-- controller results: written by berth-bench controller -->", "<!-- end of controller results -->"

// The controller case's goals, for 1000 Releases on this 2-core machine.
const (
	goalReleases     = 1000
	goalReadySeconds = 90
	goalPeakMiB      = 200
)

// fluxAnchor is the published figure of Flux's helm-controller for the same shape: not measured
// by this harness, and from another machine.
const fluxAnchor = "| 1000, Flux helm-controller: published figure, 16-core GitHub runner, not measured here | | | 4 m 39 s | | 361 MiB | | | | | | |\n"

func (r controllerResults) write(cfg controllerConfig) error {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, cfg.name+".json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	md := r.markdown()
	if err := os.WriteFile(filepath.Join(cfg.out, cfg.name+".md"), []byte(md), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, cfg.name+".svg"), controllerSVG(r), 0o644); err != nil {
		return err
	}
	fmt.Println()
	fmt.Print(md)
	if cfg.readme != "" {
		return replaceBetween(cfg.readme, controllerResultsStart, controllerResultsEnd, md)
	}
	return nil
}

// chart is the chart every Release released: app for results written before --chart existed.
func (r controllerResults) chart() string {
	if r.Chart == "" {
		return defaultControllerChart
	}
	return r.Chart
}

// chartText names the chart every Release released, for the heading line.
func chartText(name string) string {
	spec, err := controllerChartSpec(name)
	if err != nil {
		return fmt.Sprintf("the chart `%s`", name)
	}
	return fmt.Sprintf("the chart `%s` (%d objects)", name, spec.Objects)
}

func (r controllerResults) markdown() string {
	var b strings.Builder
	if r.Label != "" {
		fmt.Fprintf(&b, "**%s**\n\n", r.Label)
	}
	if r.Interrupted {
		b.WriteString("**Stopped before every run was made: these are the runs that ended.**\n\n")
	}
	m := r.Machine
	fmt.Fprintf(&b, "Measured %s on %s (%d CPUs, %s, %s), %s; %s. Every Release releases %s.", r.Started.UTC().Format("2006-01-02"), m.CPU, m.CPUs, m.Memory, m.Kernel, m.Go, m.Berth, chartText(r.chart()))
	if len(r.Runs) > 0 {
		first := r.Runs[0]
		fmt.Fprintf(&b, " Each run on a devcluster of its own with kube-controller-manager's defaults but the controllers' rate limit (requests/s, upstream's is 20) where the table says; `berth controller` out of the cluster at `--concurrency %d`.",
			first.Concurrency)
		if first.Interval != "" {
			fmt.Fprintf(&b, " Every Release at `interval: %s`.", first.Interval)
		}
		if first.Hung > 0 {
			fmt.Fprintf(&b, " The hung Releases, created before the measured ones, have a chart repository that accepts connections and never answers (`timeout: %s`); they are never Ready, and the times are the measured Releases'.", hungTimeout)
		}
	}
	b.WriteString("\n\n")
	b.WriteString("| Releases | hung Releases | cluster's rate limit | all Ready | created in | controller peak RSS at Ready / whole run | CPU until Ready: controller / cluster (load average) | API requests until Ready (per Release) | chart repository requests | writes (requests) in the steady state after | index / chart downloads (304 revalidations) in the steady state | delete until gone (requests) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range r.Runs {
		if run.Error != "" && run.ReadySeconds == 0 {
			fmt.Fprintf(&b, "| %d | %d | %d | failed: %s | | | | | | | | |\n", run.Releases, run.Hung, run.ControllerQPS, firstLineOf(run.Error))
			continue
		}
		perRelease := float64(run.Requests) / float64(run.Releases)
		steady := fmt.Sprintf("%d (%d) in %s", run.SteadyWrites, run.SteadyRequests, durationText(run.SteadySeconds))
		if run.SteadyHungWrites > 0 {
			steady += fmt.Sprintf(", %d of the writes for the hung Releases", run.SteadyHungWrites)
		}
		downloads := fmt.Sprintf("%d / %d (%d)", run.SteadyIndexDownloads, run.SteadyChartDownloads, run.SteadyRevalidations)
		del := deleteText(run.DeleteSkipped, run.DeleteSeconds, run.DeleteRequests)
		whole := "–"
		if run.PeakRSSBytes > 0 {
			whole = mib(run.PeakRSSBytes)
		}
		fmt.Fprintf(&b, "| %d | %d | %d | %s | %s | %s / %s MiB | %.1f s / %.1f s (%.1f) | %d (%.1f) | %d | %s | %s | %s |\n", run.Releases, run.Hung, run.ControllerQPS, durationText(run.ReadySeconds),
			durationText(run.CreateSeconds), mib(run.PeakRSSReadyBytes), whole, run.CPUSecondsReady, run.ClusterCPUSecondsReady, run.LoadAverage,
			run.Requests, perRelease, run.ChartRequests, steady, downloads, del)
		if run.Error != "" {
			fmt.Fprintf(&b, "| | | | failed after Ready: %s | | | | | | | | |\n", firstLineOf(run.Error))
		}
	}
	if r.chart() == defaultControllerChart {
		b.WriteString(fluxAnchor) // a figure for the app chart's shape
	}
	if floor := rolloutFloorText(r.Runs); floor != "" {
		b.WriteString("\n" + floor + "\n")
	}
	b.WriteString("\nThe controller's requests until every Release was Ready, by verb and resource (from the API server's audit log):\n\n")
	b.WriteString(requestsTable(r.Runs))
	if writes := steadyWritesText(r.Runs); writes != "" {
		b.WriteString("\nWrites in the steady state: " + writes + ".\n")
	}
	b.WriteString("\n| goal | measured | met |\n|---|---|---|\n")
	for _, g := range controllerGoals(r.chart(), r.Runs) {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", g.Goal, g.Measured, g.Met)
	}
	b.WriteString(fleetMarkdown(r.Fleet, r.Runs))
	return b.String()
}

// rolloutFloorText says, run by run, how many requests the cluster's Deployment controller made
// until every Release was Ready and how long that takes at the cluster's rate limit: a floor
// under the time until Ready that no controller of Releases can go below.
func rolloutFloorText(runs []controllerRun) string {
	var parts []string
	for _, run := range runs {
		dep := run.ClusterRequests["deployment-controller"]
		if dep == 0 || run.ControllerQPS == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%d Releases at %d/s: %d requests of the Deployment controller and %d of the ReplicaSet controller, %s at that rate",
			run.Releases, run.ControllerQPS, dep, run.ClusterRequests["replicaset-controller"], durationText(float64(dep)/float64(run.ControllerQPS))))
	}
	if len(parts) == 0 {
		return ""
	}
	return "The cluster's side of the rollouts until every Release was Ready (each controller of the cluster has its own rate limit): " + strings.Join(parts, "; ") + "."
}

// requestsTable is the requests until Ready by verb and resource, a column a run, the most
// frequent first (by the last run).
func requestsTable(runs []controllerRun) string {
	keys := map[string]bool{}
	for _, run := range runs {
		for k := range run.RequestsByResource {
			keys[k] = true
		}
	}
	if len(keys) == 0 {
		return "(none recorded)\n"
	}
	last := runs[len(runs)-1].RequestsByResource
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool {
		if last[sorted[i]] != last[sorted[j]] {
			return last[sorted[i]] > last[sorted[j]]
		}
		return sorted[i] < sorted[j]
	})
	var b strings.Builder
	b.WriteString("| request |")
	for _, run := range runs {
		fmt.Fprintf(&b, " %d Releases, %d/s |", run.Releases, run.ControllerQPS)
	}
	b.WriteString("\n|---|")
	for range runs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, k := range sorted {
		fmt.Fprintf(&b, "| %s |", k)
		for _, run := range runs {
			fmt.Fprintf(&b, " %d |", run.RequestsByResource[k])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// steadyWritesText names the writes of the steady state, run by run; empty when there were none.
func steadyWritesText(runs []controllerRun) string {
	var parts []string
	for _, run := range runs {
		var ws []string
		for k, n := range run.SteadyByVerb {
			verb, _, _ := strings.Cut(k, " ")
			if isWrite(verb) {
				ws = append(ws, fmt.Sprintf("%d %s", n, k))
			}
		}
		if len(ws) > 0 {
			sort.Strings(ws)
			parts = append(parts, fmt.Sprintf("%d Releases at %d/s: %s", run.Releases, run.ControllerQPS, strings.Join(ws, ", ")))
		}
	}
	return strings.Join(parts, "; ")
}

// controllerGoal is a goal of the controller case; Met is "yes", "no" or "–" (not run).
type controllerGoal struct {
	Goal, Measured, Met string
}

// missedControllerGoals are the goals that were not met; one not judged ("–") is not missed.
func missedControllerGoals(goals []controllerGoal) []string {
	var out []string
	for _, g := range goals {
		if g.Met == "no" {
			out = append(out, fmt.Sprintf("%s: %s", g.Goal, g.Measured))
		}
	}
	return out
}

// controllerGoals are the goals of runs of the chart: for app, time and memory at 1000 Releases;
// for another chart, requests per Release and memory at every count (chartGoals); for both,
// nothing written and nothing downloaded in the steady state.
func controllerGoals(chart string, runs []controllerRun) []controllerGoal {
	var out []controllerGoal
	if chart != defaultControllerChart {
		out = chartGoals(chart, runs)
		return append(out, steadyGoal(runs), downloadGoal(runs))
	}
	for _, run := range runs {
		if run.Releases != goalReleases {
			continue
		}
		at := fmt.Sprintf(" (cluster's rate limit %d/s)", run.ControllerQPS)
		if run.Hung > 0 {
			at = fmt.Sprintf(" (cluster's rate limit %d/s, %d hung Releases beside)", run.ControllerQPS, run.Hung)
		}
		ready := controllerGoal{Goal: fmt.Sprintf("%d Releases Ready in at most %d s", goalReleases, goalReadySeconds) + at}
		peak := controllerGoal{Goal: fmt.Sprintf("controller peak memory at most %d MiB with %d Releases", goalPeakMiB, goalReleases) + at}
		if run.ReadySeconds == 0 {
			ready.Measured, ready.Met = "failed", "no"
			peak.Measured, peak.Met = "failed", "no"
		} else {
			ready.Measured, ready.Met = durationText(run.ReadySeconds), yesNo(run.ReadySeconds <= goalReadySeconds)
			p := max(run.PeakRSSReadyBytes, run.PeakRSSBytes)
			peak.Measured, peak.Met = mib(p)+" MiB", yesNo(float64(p)/(1<<20) <= goalPeakMiB)
		}
		out = append(out, ready, peak)
	}
	if len(out) == 0 {
		out = append(out, controllerGoal{Goal: fmt.Sprintf("%d Releases Ready in at most %d s, controller peak memory at most %d MiB", goalReleases, goalReadySeconds, goalPeakMiB),
			Measured: "not run", Met: "–"})
	}
	return append(out, steadyGoal(runs), downloadGoal(runs))
}

// steadyGoal is that the controller writes nothing in the steady state.
func steadyGoal(runs []controllerRun) controllerGoal {
	steady := controllerGoal{Goal: "no writes in the steady state after every Release is Ready"}
	var ms []string
	met := len(runs) > 0
	for _, run := range runs {
		if run.ReadySeconds == 0 || run.SteadySeconds == 0 {
			ms = append(ms, fmt.Sprintf("%d Releases at %d/s: not measured", run.Releases, run.ControllerQPS))
			met = false
			continue
		}
		ms = append(ms, fmt.Sprintf("%d in %s (%d Releases at %d/s)", run.SteadyWrites, durationText(run.SteadySeconds), run.Releases, run.ControllerQPS))
		met = met && run.SteadyWrites == 0
	}
	steady.Measured, steady.Met = strings.Join(ms, ", "), yesNo(met)
	return steady
}

// chartGoals are the goals of each run of a chart other than app, at whatever count of
// Releases: its requests until Ready at most requestsGoal a Release (app's 20, less what app's
// objects cost, plus what the chart's cost), and the controller's peak memory within app's bound
// at 1000 Releases.
func chartGoals(chart string, runs []controllerRun) []controllerGoal {
	kinds, err := controllerChartKinds(chart)
	if err != nil {
		return []controllerGoal{{Goal: "requests per Release", Measured: err.Error(), Met: "–"}}
	}
	bound, err := requestsGoal(kinds)
	if err != nil {
		return []controllerGoal{{Goal: "requests per Release", Measured: err.Error(), Met: "–"}}
	}
	app, _ := controllerChartKinds(defaultControllerChart)
	var out []controllerGoal
	for _, run := range runs {
		at := fmt.Sprintf(" with %d Releases of %s (cluster's rate limit %d/s)", run.Releases, chart, run.ControllerQPS)
		requests := controllerGoal{Goal: fmt.Sprintf("at most %d API requests a Release until Ready (app's %d, less %d for its objects, plus %d for %s's)",
			bound, goalRequestsPerRelease, objectRequests(app), objectRequests(kinds), chart) + at}
		peak := controllerGoal{Goal: fmt.Sprintf("controller peak memory at most %d MiB (app's bound at %d Releases)", goalPeakMiB, goalReleases) + at}
		if run.ReadySeconds == 0 {
			requests.Measured, requests.Met = "failed", "no"
			peak.Measured, peak.Met = "failed", "no"
		} else {
			per := float64(run.Requests) / float64(run.Releases)
			requests.Measured, requests.Met = fmt.Sprintf("%.1f (%d)", per, run.Requests), yesNo(per <= float64(bound))
			p := max(run.PeakRSSReadyBytes, run.PeakRSSBytes)
			peak.Measured, peak.Met = mib(p)+" MiB", yesNo(float64(p)/(1<<20) <= goalPeakMiB)
		}
		out = append(out, requests, peak)
	}
	if len(out) == 0 {
		out = append(out, controllerGoal{Goal: fmt.Sprintf("at most %d API requests a Release until Ready, controller peak memory at most %d MiB", bound, goalPeakMiB),
			Measured: "not run", Met: "–"})
	}
	return out
}

// downloadGoal is that the chart repository serves no index and no chart in the steady state:
// a Release whose chart has not changed is checked against the repository's cache.
func downloadGoal(runs []controllerRun) controllerGoal {
	g := controllerGoal{Goal: "no chart or index downloads in the steady state"}
	var ms []string
	met := len(runs) > 0
	for _, run := range runs {
		if run.ReadySeconds == 0 || run.SteadySeconds == 0 {
			ms = append(ms, fmt.Sprintf("%d Releases at %d/s: not measured", run.Releases, run.ControllerQPS))
			met = false
			continue
		}
		ms = append(ms, fmt.Sprintf("%d index and %d chart downloads in %s (%d Releases at %d/s)",
			run.SteadyIndexDownloads, run.SteadyChartDownloads, durationText(run.SteadySeconds), run.Releases, run.ControllerQPS))
		met = met && run.SteadyIndexDownloads == 0 && run.SteadyChartDownloads == 0
	}
	g.Measured, g.Met = strings.Join(ms, ", "), yesNo(met)
	return g
}

// deleteText is the deletion's column: "2 m 53 s (41000)", "not measured" when the run skipped
// it, empty when it failed before.
func deleteText(skipped bool, seconds float64, requests int) string {
	switch {
	case skipped:
		return "not measured"
	case seconds > 0:
		return fmt.Sprintf("%s (%d)", durationText(seconds), requests)
	}
	return ""
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func mib(b int64) string { return fmt.Sprintf("%.0f", float64(b)/(1<<20)) }

// durationText is seconds as "42.1 s" or, from two minutes, "4 m 39 s".
func durationText(s float64) string {
	if s < 120 {
		return fmt.Sprintf("%.1f s", s)
	}
	whole := int(s + 0.5)
	return fmt.Sprintf("%d m %02d s", whole/60, whole%60)
}

func verbsText(byVerb map[string]int) string {
	var parts []string
	for v, n := range byVerb {
		parts = append(parts, fmt.Sprintf("%s %d", v, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.ReplaceAll(line, "|", "\\|")
}
