package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// "berth-bench window" measures what the watch window (--watch-for) costs an upgrade: the API
// requests it adds, by verb and resource, for a chart of 10 objects and one of 500 (the window
// should add its watches and nothing per object), and, against a baseline binary built before
// the window existed, that an upgrade without --watch-for takes as long and sends as many
// requests as before.

// windowConfig is what "window" was asked to do.
type windowConfig struct {
	berth, baseline, devcluster, measurer string
	rounds                                int
	window                                time.Duration
	cases                                 []string
	out, work                             string
}

func parseWindowFlags(args []string) (windowConfig, error) {
	fs := flag.NewFlagSet("window", flag.ContinueOnError)
	var cfg windowConfig
	var cases string
	fs.StringVar(&cfg.berth, "berth", "bin/berth", "berth binary")
	fs.StringVar(&cfg.baseline, "baseline", "", "a berth binary built before --watch-for existed, whose upgrades without a window are compared with berth's (empty: none)")
	fs.StringVar(&cfg.devcluster, "devcluster", "bin/berth-devcluster", "devcluster binary")
	fs.StringVar(&cfg.measurer, "measurer", "bin/berth-bench-measure", "berth-bench-measure binary, which runs each command")
	fs.IntVar(&cfg.rounds, "rounds", 5, "counted rounds of each case, after a warm-up: each upgrades once without a window, once with one and once with the baseline")
	fs.DurationVar(&cfg.window, "window", 5*time.Second, "the --watch-for of the upgrades with a window")
	fs.StringVar(&cases, "cases", "small,large-flat", "charts upgraded, comma-separated")
	fs.StringVar(&cfg.out, "out", "bench/results", "directory for window.json and window.md")
	fs.StringVar(&cfg.work, "work", "", "work directory for the cluster and charts (default: a new temporary directory)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.rounds < 1 {
		return cfg, fmt.Errorf("--rounds must be at least 1, got %d", cfg.rounds)
	}
	if cfg.window <= 0 {
		return cfg, fmt.Errorf("--window must be more than 0, got %s", cfg.window)
	}
	for _, name := range strings.Split(cases, ",") {
		if _, ok := chartByName(name); !ok {
			return cfg, fmt.Errorf("--cases: unknown chart %q", name)
		}
		cfg.cases = append(cfg.cases, name)
	}
	return cfg, nil
}

// The kinds of upgrade a round makes.
const (
	upgradePlain    = "berth"
	upgradeWindow   = "berth --watch-for"
	upgradeBaseline = "baseline"
)

// windowSample is one upgrade.
type windowSample struct {
	Case    string  `json:"case"`
	Kind    string  `json:"kind"`
	Round   int     `json:"round"` // 0 is the warm-up, not counted
	Seconds float64 `json:"seconds"`
	// Requests are the upgrade's API requests, by verb and resource.
	Requests    map[string]int `json:"requests"`
	APIRequests int            `json:"api_requests"`
	Error       string         `json:"error,omitempty"`
}

// windowCase sums up one chart's upgrades.
type windowCase struct {
	Case    string `json:"case"`
	Objects int    `json:"objects"`
	// Seconds and Requests are by kind of upgrade.
	Seconds  map[string]spread `json:"seconds"`
	Requests map[string]spread `json:"requests"`
	// Added are the requests an upgrade with a window sends beyond one without, by verb and
	// resource, from the medians of each.
	Added map[string]float64 `json:"added"`
	// PlainOverBaseline is the ratio of the upgrade's time without a window over the
	// baseline's, round by round.
	PlainOverBaseline spread `json:"plain_over_baseline"`
}

type windowResults struct {
	Machine  machine        `json:"machine"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
	Window   string         `json:"window"`
	Rounds   int            `json:"rounds"`
	Cases    []windowCase   `json:"cases"`
	Samples  []windowSample `json:"samples"`
}

func runWindowBench(args []string) error {
	cfg, err := parseWindowFlags(args)
	if err != nil {
		return err
	}
	bins := []*string{&cfg.berth, &cfg.devcluster, &cfg.measurer}
	if cfg.baseline != "" {
		bins = append(bins, &cfg.baseline)
	}
	if err := absBinaries(bins...); err != nil {
		return err
	}
	if cfg.work == "" {
		if cfg.work, err = os.MkdirTemp("", "berth-bench-window-"); err != nil {
			return err
		}
		defer os.RemoveAll(cfg.work)
	}
	// Copies of the binaries, as "run" makes them (see there).
	for dir, bin := range map[string]*string{"berth": &cfg.berth, "baseline": &cfg.baseline} {
		if *bin == "" {
			continue
		}
		if *bin, err = copyBinary(*bin, filepath.Join(cfg.work, "bin", dir)); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	runCfg := config{berth: cfg.berth, devcluster: cfg.devcluster, measurer: cfg.measurer, work: cfg.work}
	res := windowResults{Machine: describeMachine(runCfg), Started: time.Now(), Window: cfg.window.String(), Rounds: cfg.rounds}
	dir := filepath.Join(cfg.work, "cluster")
	cs := clusterSettings{Cases: cfg.cases, JobBatchPeriod: upstreamJobBatchPeriod.String(), ControllerQPS: 20}
	fmt.Printf("starting devcluster in %s\n", dir)
	cluster, err := startCluster(ctx, runCfg, cs, dir)
	if err != nil {
		return err
	}
	defer cluster.stop()
	h, err := newHarness(runCfg, cluster.kubeconfig, cluster.audit, os.Stdout)
	if err != nil {
		return err
	}
	for _, name := range cfg.cases {
		spec, _ := chartByName(name)
		samples, err := h.upgradeRounds(ctx, &benchCase{Name: name, Chart: spec}, cfg)
		res.Samples = append(res.Samples, samples...)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		res.Cases = append(res.Cases, summarizeWindow(name, spec.Objects, samples))
	}
	res.Finished = time.Now()
	return res.write(cfg)
}

// upgradeRounds installs the case's chart once, then upgrades it in each round: without a
// window, with one, and with the baseline binary, in an order that turns with the round. Each
// upgrade gives a new generation, so each changes the same half of the objects.
func (h *harness) upgradeRounds(ctx context.Context, c *benchCase, cfg windowConfig) ([]windowSample, error) {
	if err := h.prepare(ctx, c); err != nil {
		return nil, err
	}
	ns := "bench-window-" + c.Name
	if err := h.createNamespace(ctx, ns); err != nil {
		return nil, err
	}
	kinds := []string{upgradePlain, upgradeWindow}
	if cfg.baseline != "" {
		kinds = append(kinds, upgradeBaseline)
	}
	install := runProcess(ctx, h.cfg.measurer, h.env, cfg.berth, "install", releaseName, c.path, "-n", ns, "--wait",
		"--timeout", toolTimeout, "--set", "generation=1")
	if install.Err != nil {
		return nil, fmt.Errorf("install: %w\n%s", install.Err, lastLines(install.Output, 20))
	}
	var out []windowSample
	generation := 1
	for round := 0; round <= cfg.rounds; round++ {
		for _, kind := range roundOrder(kinds, round) {
			generation++
			bin := cfg.berth
			if kind == upgradeBaseline {
				bin = cfg.baseline
			}
			argv := []string{bin, "upgrade", releaseName, c.path, "-n", ns, "--wait", "--timeout", toolTimeout,
				"--set", "generation=" + strconv.Itoa(generation)}
			if kind == upgradeWindow {
				argv = append(argv, "--watch-for", cfg.window.String())
			}
			p := runProcess(ctx, h.cfg.measurer, h.env, argv...)
			s := windowSample{Case: c.Name, Kind: kind, Round: round, Seconds: p.Wall().Seconds()}
			if p.Err != nil {
				s.Error = fmt.Sprintf("%v: %s", p.Err, lastLines(p.Output, 5))
			}
			sleep(ctx, auditSettle)
			n, byResource, err := h.audit.count(p.Start, p.End, userAgentOf("berth"), byVerbAndResource)
			if err != nil {
				return out, fmt.Errorf("audit log: %w", err)
			}
			s.APIRequests, s.Requests = n, byResource
			fmt.Fprintf(h.log, "  %s %s round %d: %.2f s, %d requests %s\n", c.Name, kind, round, s.Seconds, n, s.Error)
			out = append(out, s)
			if p.Err != nil {
				return out, fmt.Errorf("%s: %s", kind, s.Error)
			}
		}
	}
	return out, h.cleanup(ctx, c, ns)
}

// summarizeWindow sums up the counted rounds of one case.
func summarizeWindow(name string, objects int, samples []windowSample) windowCase {
	wc := windowCase{Case: name, Objects: objects, Seconds: map[string]spread{}, Requests: map[string]spread{}, Added: map[string]float64{}}
	seconds, requests := map[string][]float64{}, map[string][]float64{}
	byResource := map[string]map[string][]float64{}
	byRound := map[int]map[string]float64{}
	for _, s := range samples {
		if s.Round == 0 || s.Error != "" {
			continue
		}
		seconds[s.Kind] = append(seconds[s.Kind], s.Seconds)
		requests[s.Kind] = append(requests[s.Kind], float64(s.APIRequests))
		if byResource[s.Kind] == nil {
			byResource[s.Kind] = map[string][]float64{}
		}
		for k, n := range s.Requests {
			byResource[s.Kind][k] = append(byResource[s.Kind][k], float64(n))
		}
		if byRound[s.Round] == nil {
			byRound[s.Round] = map[string]float64{}
		}
		byRound[s.Round][s.Kind] = s.Seconds
	}
	for kind, xs := range seconds {
		wc.Seconds[kind] = spreadOf(xs)
		wc.Requests[kind] = spreadOf(requests[kind])
	}
	keys := map[string]bool{}
	for _, kind := range []string{upgradePlain, upgradeWindow} {
		for k := range byResource[kind] {
			keys[k] = true
		}
	}
	for k := range keys {
		// A request an upgrade made in only some rounds counts 0 in the others.
		with := padded(byResource[upgradeWindow][k], len(seconds[upgradeWindow]))
		without := padded(byResource[upgradePlain][k], len(seconds[upgradePlain]))
		if d := spreadOf(with).Median - spreadOf(without).Median; d != 0 {
			wc.Added[k] = d
		}
	}
	var ratios []float64
	for _, r := range byRound {
		if b, ok := r[upgradeBaseline]; ok && b > 0 {
			if p, ok := r[upgradePlain]; ok {
				ratios = append(ratios, p/b)
			}
		}
	}
	wc.PlainOverBaseline = spreadOf(ratios)
	return wc
}

// padded is xs with zeros up to n values.
func padded(xs []float64, n int) []float64 {
	for len(xs) < n {
		xs = append(xs, 0)
	}
	return xs
}

func (r windowResults) write(cfg windowConfig) error {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, "window.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	md := r.markdown()
	fmt.Print(md)
	return os.WriteFile(filepath.Join(cfg.out, "window.md"), []byte(md), 0o644)
}

// markdown renders the results as bench/README.md shows them.
func (r windowResults) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s (%d CPUs), %d counted rounds after a warm-up, window %s.\n\n",
		r.Finished.UTC().Format("2006-01-02"), r.Machine.CPU, r.Machine.CPUs, r.Rounds, r.Window)
	b.WriteString("| chart | objects | upgrade | time | requests |\n|---|---|---|---|---|\n")
	for _, c := range r.Cases {
		for _, kind := range []string{upgradeBaseline, upgradePlain, upgradeWindow} {
			s, ok := c.Seconds[kind]
			if !ok {
				continue
			}
			q := c.Requests[kind]
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %.0f (%.0f–%.0f) |\n", c.Case, c.Objects, kind, secondsText(s), q.Median, q.Min, q.Max)
		}
	}
	b.WriteString("\nWhat an upgrade with a window sends beyond one without (medians), by verb and resource:\n\n")
	b.WriteString("| chart | added requests |\n|---|---|\n")
	for _, c := range r.Cases {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(c.Added)) {
			parts = append(parts, fmt.Sprintf("%s %+.0f", k, c.Added[k]))
		}
		fmt.Fprintf(&b, "| %s | %s |\n", c.Case, strings.Join(parts, ", "))
	}
	var ratios []string
	for _, c := range r.Cases {
		if c.PlainOverBaseline.valid() {
			ratios = append(ratios, fmt.Sprintf("%s %s", c.Case, ratioText(c.PlainOverBaseline)))
		}
	}
	if len(ratios) > 0 {
		fmt.Fprintf(&b, "\nAn upgrade without a window over the baseline's, round by round: %s.\n", strings.Join(ratios, "; "))
	}
	return b.String()
}
