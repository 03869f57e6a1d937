// Command berth-bench measures berth against Helm v4 and against the client-go floor on one local
// cluster: install --wait, upgrade --wait and uninstall --wait --cascade=foreground of generated
// charts, the tools taking turns, each run in a fresh namespace. See README.md.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const usage = `berth-bench measures berth against Helm v4 and the client-go floor.

Usage:
  berth-bench run [flags]      start a devcluster and run the benchmark (see run -h)
  berth-bench charts DIR       write the generated charts into DIR
  berth-bench controller [flags]  start a devcluster and measure berth controller reconciling
                               many Releases at once (see controller -h)
  berth-bench records [flags]  start a devcluster and measure large release records: writing
                               and reading one, and list -A over many (see records -h)
  berth-bench window [flags]   start a devcluster and measure what the watch window (--watch-for)
                               adds to an upgrade, and an upgrade without it against a baseline
                               binary (see window -h)
  berth-bench plot RESULTS.json [OUT.svg]
                               draw the growth curves of controller results already written,
                               running nothing (default OUT: RESULTS with .svg)
  berth-bench report [flags] RESULTS.json
                               summarize again the samples of a run's results (latest.json) with
                               this harness's tables and goals, and write them as "run" does,
                               running nothing (see report -h)
  berth-bench floor [flags]    one operation of the client-go floor (run by "run")

"run", "report", "controller" and "records" write their results, then exit 2 when a goal of the results' goal table
was missed; with -report-only they only report the goals and exit 0. Any other failure exits 1.
`

// exitGoalsMissed is the exit code of a benchmark that ran and missed a goal.
const exitGoalsMissed = 2

// reportOnlyUsage is the help of -report-only, a flag of "run" and "controller".
const reportOnlyUsage = "only report the goals: exit 0 when one is missed (default: exit 2)"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "berth-bench: %v\n", err)
		var missed goalsMissed
		if errors.As(err, &missed) {
			os.Exit(exitGoalsMissed)
		}
		os.Exit(1)
	}
}

// goalsMissed names the goals a benchmark missed once its results are written.
type goalsMissed []string

func (g goalsMissed) Error() string {
	return fmt.Sprintf("%d goal(s) missed (-report-only only reports them):\n  %s", len(g), strings.Join(g, "\n  "))
}

// judge is the outcome of a benchmark whose results are written, given the goals it missed: an
// error naming them, unless reportOnly.
func judge(missed []string, reportOnly bool) error {
	if len(missed) == 0 || reportOnly {
		return nil
	}
	return goalsMissed(missed)
}

// missedGoals are the goals of "run" that were not met.
func missedGoals(goals []goal) []string {
	var out []string
	for _, g := range goals {
		if !g.Met {
			out = append(out, fmt.Sprintf("%s: %s", g.Goal, g.Measured))
		}
	}
	return out
}

func run(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return errors.New("missing command")
	}
	switch args[0] {
	case "run":
		return runBench(args[1:])
	case "floor":
		return runFloor(args[1:])
	case "controller":
		return runControllerBench(args[1:])
	case "records":
		return runRecordsBench(args[1:])
	case "window":
		return runWindowBench(args[1:])
	case "plot":
		return runPlot(args[1:])
	case "report":
		return runReport(args[1:])

	case "charts":
		if len(args) != 2 {
			return errors.New("charts: want one directory")
		}
		for _, c := range charts() {
			path, err := c.write(args[1])
			if err != nil {
				return err
			}
			fmt.Println(path)
		}
		return nil
	case "help", "-h", "--help":
		fmt.Print(usage)
		return nil
	default:
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

// config is what "run" was asked to do.
type config struct {
	berth, helm, devcluster string
	// measurer is berth-bench-measure, which runs each command.
	measurer string
	// self is this binary, which runs the floor.
	self          string
	pairs         int
	cases         []string
	tools         []string
	out, work     string
	readme        string
	controllerQPS int
	hooksJobBatch time.Duration
	profile       string
	// reportOnly leaves the exit code 0 when a goal is missed.
	reportOnly bool
}

var allCases = []string{"small", "large", "large-flat", "hooks", "hooks-base", "ordered", "large-record", "huge-record"}

// upstreamJobBatchPeriod is kube-controller-manager's: the Job controller batches a Job's Pod
// updates for a second before it syncs the Job.
const upstreamJobBatchPeriod = time.Second

// clusterSettings are the options of one devcluster and the cases that run on it.
type clusterSettings struct {
	Cases []string `json:"cases"`
	// JobBatchPeriod is the Job controller's batch period (upstream: 1s).
	JobBatchPeriod string `json:"job_batch_period"`
	// ControllerQPS is the controllers' client-side rate limit (upstream: 20, burst 30).
	ControllerQPS int `json:"controller_qps"`
}

// clustersFor groups the cases by the cluster they run on: the hooks cases on one whose Job
// controller batches for hooksJobBatch, every other case on one with kube-controller-manager's
// defaults (both with the controllers' rate limit at qps). The order of the cases is kept within
// a cluster.
func clustersFor(cases []string, qps int, hooksJobBatch time.Duration) []clusterSettings {
	var out []clusterSettings
	add := func(c string, period time.Duration) {
		for i := range out {
			if out[i].JobBatchPeriod == period.String() {
				out[i].Cases = append(out[i].Cases, c)
				return
			}
		}
		out = append(out, clusterSettings{Cases: []string{c}, JobBatchPeriod: period.String(), ControllerQPS: qps})
	}
	for _, c := range cases {
		if c == "hooks" || c == "hooks-base" {
			add(c, hooksJobBatch)
		} else {
			add(c, upstreamJobBatchPeriod)
		}
	}
	return out
}

// describe says in words how the cluster differs from kube-controller-manager's defaults.
func (cs clusterSettings) describe() string {
	var diffs []string
	if cs.JobBatchPeriod != upstreamJobBatchPeriod.String() {
		diffs = append(diffs, "the Job controller's batch period at "+cs.JobBatchPeriod)
	}
	if cs.ControllerQPS != 20 {
		diffs = append(diffs, fmt.Sprintf("the controllers' rate limit at %d requests/s", cs.ControllerQPS))
	}
	how := "kube-controller-manager's defaults"
	if len(diffs) > 0 {
		how += " but " + strings.Join(diffs, " and ")
	}
	return strings.Join(cs.Cases, ", ") + " on a devcluster with " + how
}

func runBench(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var cfg config
	var cases string
	fs.StringVar(&cfg.berth, "berth", "bin/berth", "berth binary")
	fs.StringVar(&cfg.helm, "helm", "bin/helm", "Helm v4 binary")
	fs.StringVar(&cfg.devcluster, "devcluster", "bin/berth-devcluster", "devcluster binary")
	fs.StringVar(&cfg.measurer, "measurer", "bin/berth-bench-measure", "berth-bench-measure binary, which runs each command and reads its peak memory")
	fs.IntVar(&cfg.pairs, "pairs", 5, "counted rounds per case after the warm-up; each round runs every tool once")
	fs.StringVar(&cases, "cases", strings.Join(allCases, ","), "cases to run: small, large, large-flat, hooks, hooks-base (the hooks chart without its hooks), ordered (three resource groups, --wait=ordered), large-record (a record of kube-prometheus-stack's size), huge-record (a record of 3 MiB)")
	fs.StringVar(&cfg.out, "out", "bench/results", "directory for latest.json and latest.md")
	fs.StringVar(&cfg.readme, "readme", "bench/README.md", "README whose results section is replaced by the new table (empty: none)")
	fs.StringVar(&cfg.work, "work", "", "work directory for the cluster and charts (default: a new temporary directory)")
	fs.DurationVar(&cfg.hooksJobBatch, "hooks-job-batch-period", 10*time.Millisecond,
		"the Job controller's batching of Pod updates on the devcluster of the hooks cases (upstream: 1s); short, so that hook overhead is the tools'.\nThe other cases run on a devcluster with the upstream 1s")
	fs.IntVar(&cfg.controllerQPS, "controller-qps", 20,
		"the devcluster controllers' requests per second (burst 1.5 times it), on every cluster; upstream's 20 makes the garbage collector's foreground deletions set the pace of an uninstall")
	fs.StringVar(&cfg.profile, "profile", "", "directory for berth's CPU and allocation profiles of each operation of the warm-up round, DIR/CASE-OP/ (BERTH_PROFILE_DIR; default: none)")
	fs.BoolVar(&cfg.reportOnly, "report-only", false, reportOnlyUsage)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.pairs < 1 {
		return fmt.Errorf("--pairs must be at least 1, got %d", cfg.pairs)
	}
	if cfg.controllerQPS < 1 {
		return fmt.Errorf("--controller-qps must be at least 1, got %d", cfg.controllerQPS)
	}
	if cfg.hooksJobBatch <= 0 {
		return fmt.Errorf("--hooks-job-batch-period must be greater than 0, got %s", cfg.hooksJobBatch)
	}
	if cfg.profile != "" {
		abs, err := filepath.Abs(cfg.profile)
		if err != nil {
			return err
		}
		cfg.profile = abs
	}
	cfg.tools = tools
	for _, c := range strings.Split(cases, ",") {
		if !contains(allCases, c) {
			return fmt.Errorf("--cases: unknown case %q (known: %s)", c, strings.Join(allCases, ", "))
		}
		cfg.cases = append(cfg.cases, c)
	}
	if err := absBinaries(&cfg.berth, &cfg.helm, &cfg.devcluster, &cfg.measurer); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.self = self
	if cfg.work == "" {
		if cfg.work, err = os.MkdirTemp("", "berth-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(cfg.work)
	}
	// Run copies of the binaries, written alike: the Go linker writes its output through a memory
	// map, and such a file is mapped into a process in large pieces, which makes a freshly built
	// binary look 10 MiB or more bigger in memory than a copy of itself.
	for _, bin := range []*string{&cfg.berth, &cfg.helm, &cfg.self} {
		if *bin, err = copyBinary(*bin, filepath.Join(cfg.work, "bin")); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	started := time.Now()
	clusters := clustersFor(cfg.cases, cfg.controllerQPS, cfg.hooksJobBatch)
	var samples []sample
	for i, cs := range clusters {
		got, err := runOnCluster(ctx, cfg, cs, filepath.Join(cfg.work, fmt.Sprintf("cluster-%d", i)))
		samples = append(samples, got...)
		if err != nil {
			return err
		}
	}
	hooks, _ := chartByName("hooks")
	run, _ := time.ParseDuration(hookRun)
	sum := summarize(samples, cfg.cases, cfg.tools, hooks.Hooks, run)
	res := results{Machine: describeMachine(cfg), Clusters: clusters, Started: started, Finished: time.Now(), Pairs: cfg.pairs,
		Cases: cfg.cases, Tools: cfg.tools, ToolLabels: toolLabels(cfg.tools), Order: roundOrders(cfg.tools, cfg.pairs),
		Summary: sum, Samples: samples}
	if err := res.write(cfg); err != nil {
		return err
	}
	return judge(missedGoals(sum.Goals), cfg.reportOnly)
}

// runOnCluster starts a devcluster in dir with the settings cs, runs its cases there and stops it.
func runOnCluster(ctx context.Context, cfg config, cs clusterSettings, dir string) ([]sample, error) {
	fmt.Printf("starting devcluster in %s: %s\n", dir, cs.describe())
	cluster, err := startCluster(ctx, cfg, cs, dir)
	if err != nil {
		return nil, err
	}
	defer cluster.stop()
	h, err := newHarness(cfg, cluster.kubeconfig, cluster.audit, os.Stdout)
	if err != nil {
		return nil, err
	}
	for _, name := range cs.Cases {
		c := caseNamed(name)
		fmt.Printf("\n== %s: %d objects (%d CRDs from crds/), %d hooks\n", c.Name, c.Chart.Objects+c.Chart.CRDs, c.Chart.CRDs, c.hooks())
		if err := h.runCase(ctx, &c); err != nil {
			return h.samples, fmt.Errorf("case %s: %w", name, err)
		}
		if ctx.Err() != nil {
			return h.samples, errInterrupted
		}
	}
	return h.samples, nil
}

// absBinaries makes each binary's path absolute, and says which one is missing.
func absBinaries(bins ...*string) error {
	for _, bin := range bins {
		abs, err := filepath.Abs(*bin)
		if err != nil {
			return err
		}
		if !fileExists(abs) {
			return fmt.Errorf("%s not found: build it first (make bench builds everything)", *bin)
		}
		*bin = abs
	}
	return nil
}

// copyBinary copies the executable at path into dir and returns the copy's path.
func copyBinary(path, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	in, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	dst := filepath.Join(dir, filepath.Base(path))
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", err
	}
	return dst, out.Close()
}

func caseNamed(name string) benchCase {
	switch name {
	case "hooks-base":
		c, _ := chartByName("hooks")
		return benchCase{Name: name, Chart: c, Hooks: false}
	default:
		c, _ := chartByName(name)
		return benchCase{Name: name, Chart: c, Hooks: true}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// results is what latest.json holds.
type results struct {
	Machine  machine           `json:"machine"`
	Clusters []clusterSettings `json:"clusters"`
	Started  time.Time         `json:"started"`
	Finished time.Time         `json:"finished"`
	Pairs    int               `json:"pairs"`
	Cases    []string          `json:"cases"`
	Tools    []string          `json:"tools"`
	// ToolLabels are the tools' names in the tables.
	ToolLabels map[string]string `json:"tool_labels"`
	// Order is the order of the tools in each round of every case, the warm-up (round 0) first.
	Order   [][]string `json:"order_by_round"`
	Summary summary    `json:"summary"`
	Samples []sample   `json:"samples"`
}

func (r results) write(cfg config) error {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, "latest.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	md := r.markdown()
	if err := os.WriteFile(filepath.Join(cfg.out, "latest.md"), []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Println()
	fmt.Print(md)
	if cfg.readme != "" {
		return replaceResults(cfg.readme, md)
	}
	return nil
}

func (r results) markdown() string {
	m := r.Machine
	var clusters []string
	for _, cs := range r.Clusters {
		clusters = append(clusters, cs.describe())
	}
	return fmt.Sprintf("Measured %s on %s (%d CPUs, %s, %s), %s; %s, Helm %s; %d counted rounds after a warm-up, %s; %s.\n\n%s",
		r.Started.UTC().Format("2006-01-02"), m.CPU, m.CPUs, m.Memory, m.Kernel, m.Go, m.Berth, m.Helm, r.Pairs, orderText(r.Order),
		strings.Join(clusters, "; "), r.Summary.markdown(r.Tools))
}

// orderText says in which order the tools ran, round by round.
func orderText(order [][]string) string {
	var rounds []string
	for i, o := range order {
		name := "warm-up"
		if i > 0 {
			name = "round " + strconv.Itoa(i)
		}
		labels := make([]string, len(o))
		for j, t := range o {
			labels[j] = toolLabel(t)
		}
		rounds = append(rounds, name+": "+strings.Join(labels, ", "))
	}
	return "the tools' order rotated each round (" + strings.Join(rounds, "; ") + ")"
}

const resultsStart, resultsEnd = "<!-- results: written by berth-bench -->", "<!-- end of results -->"

// replaceResults puts md between the results markers of the README.
func replaceResults(path, md string) error {
	return replaceBetween(path, resultsStart, resultsEnd, md)
}

// replaceBetween puts md between the markers resultsStart and resultsEnd of the file at path.
func replaceBetween(path, resultsStart, resultsEnd, md string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(data)
	i, j := strings.Index(text, resultsStart), strings.Index(text, resultsEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no results markers (%q ... %q)", path, resultsStart, resultsEnd)
	}
	text = text[:i+len(resultsStart)] + "\n" + md + text[j:]
	return os.WriteFile(path, []byte(text), 0o644)
}

// machine describes where the benchmark ran.
type machine struct {
	CPU    string `json:"cpu"`
	CPUs   int    `json:"cpus"`
	Memory string `json:"memory"`
	Kernel string `json:"kernel"`
	Go     string `json:"go"`
	Berth  string `json:"berth"`
	Helm   string `json:"helm"`
}

func describeMachine(cfg config) machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	m.CPU = procField("/proc/cpuinfo", "model name")
	if kb := procField("/proc/meminfo", "MemTotal"); kb != "" {
		var n int64
		fmt.Sscanf(kb, "%d", &n)
		m.Memory = fmt.Sprintf("%.0f GiB", float64(n)/(1<<20))
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		m.Kernel = "Linux " + utsString(u.Release[:])
	}
	m.Berth = firstLine(exec.Command(cfg.berth, "version").Output())
	m.Helm = firstLine(exec.Command(cfg.helm, "version", "--short").Output())
	return m
}

func procField(path, field string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == field {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func utsString(cs []int8) string {
	var b strings.Builder
	for _, c := range cs {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

func firstLine(out []byte, err error) string {
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// devcluster is a running local cluster.
type devcluster struct {
	cmd        *exec.Cmd
	kubeconfig string
	audit      string
}

// startCluster starts "berth-devcluster up" in dir with an audit log and the settings cs, and
// waits for it to be ready.
func startCluster(ctx context.Context, cfg config, cs clusterSettings, dir string) (*devcluster, error) {
	audit := filepath.Join(dir, "audit.log")
	cmd := exec.Command(cfg.devcluster, "up", "--dir", dir, "--audit-log", audit,
		"--job-batch-period", cs.JobBatchPeriod, "--controller-qps", strconv.Itoa(cs.ControllerQPS))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &devcluster{cmd: cmd, audit: audit}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "devcluster ready: kubeconfig="); ok {
				kc, _, _ := strings.Cut(rest, " ")
				ready <- kc
			}
		}
		io.Copy(io.Discard, out)
		close(ready)
	}()
	select {
	case kc, ok := <-ready:
		if !ok {
			cmd.Wait()
			return nil, fmt.Errorf("devcluster exited before it was ready; see %s", filepath.Join(dir, "logs"))
		}
		d.kubeconfig = kc
		return d, nil
	case <-time.After(5 * time.Minute):
		d.stop()
		return nil, errors.New("devcluster not ready after 5 minutes")
	case <-ctx.Done():
		d.stop()
		return nil, errInterrupted
	}
}

func (d *devcluster) stop() {
	d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
	}
}
