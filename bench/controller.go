package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/chart"
)

// controllerName is the controller's User-Agent, before its version: berth-controller/VERSION.
const controllerName = "berth-controller"

var releaseResource = schema.GroupVersionResource{Group: "berth.dev", Version: "v1alpha1", Resource: "releases"}

// controllerConfig is what "controller" was asked to do.
type controllerConfig struct {
	berth, devcluster, measurer string
	crd                         string
	// chart is the chart every Release releases (controllerChartNames).
	chart    string
	releases []int
	// concurrency is the controller's --concurrency; 0 leaves it at its default.
	concurrency int
	// controllerQPS are the cluster controllers' rate limits to run each count of Releases at.
	controllerQPS []int
	steady        time.Duration
	timeout       time.Duration
	// hung is how many Releases on a chart repository that never answers are created before the
	// measured ones; interval is every Release's spec.interval ("": the Releases' default).
	hung        int
	interval    string
	out, readme string
	work        string
	profile     string
	// shards, when set, runs each count of Releases again split among that many controllers;
	// remote, when set, adds a run of that many Releases released into a second cluster.
	shards, remote int
	// name is the results' file name without extension; label a line that heads them.
	name, label string
	// delete, when set, measures the deletion of every Release after the steady state; a run
	// without it stops once the steady state is counted.
	delete bool
	// reportOnly leaves the exit code 0 when a goal is missed.
	reportOnly bool
}

// controllerRun is what one run of the controller case measured.
type controllerRun struct {
	Releases int `json:"releases"`
	// Hung is how many Releases on a chart repository that never answers were created before
	// the measured ones; Interval their spec.interval ("": the default).
	Hung          int    `json:"hung"`
	Interval      string `json:"interval,omitempty"`
	Concurrency   int    `json:"concurrency"`
	ControllerQPS int    `json:"controller_qps"`
	// CreateSeconds is from the first Release's create to the last one's answer.
	CreateSeconds float64 `json:"create_seconds"`
	// ReadySeconds is from the first create until the watch saw the last Release Ready.
	ReadySeconds float64 `json:"ready_seconds"`
	// PeakRSSReadyBytes is the controller's peak resident memory when every Release was Ready
	// (VmHWM); PeakRSSBytes its peak over the whole run, deletion included (ru_maxrss).
	PeakRSSReadyBytes int64   `json:"peak_rss_ready_bytes"`
	PeakRSSBytes      int64   `json:"peak_rss_bytes"`
	CPUSecondsReady   float64 `json:"cpu_seconds_ready"`
	// ClusterCPUSecondsReady is the CPU time the cluster's components (API server, etcd,
	// controllers) used from the first create until Ready; LoadAverage the machine's load
	// average over the minute before Ready, others' work included.
	ClusterCPUSecondsReady float64        `json:"cluster_cpu_seconds_ready"`
	LoadAverage            float64        `json:"load_average"`
	Requests               int            `json:"requests"`
	RequestsByVerb         map[string]int `json:"requests_by_verb"`
	// RequestsByResource counts the requests until Ready by verb and resource.
	RequestsByResource map[string]int `json:"requests_by_resource"`
	// ChartRequests is how many requests the chart repository served until Ready.
	ChartRequests int `json:"chart_requests"`
	// ClusterRequests counts, by controller of the cluster, the requests that the Deployment and
	// ReplicaSet controllers made until Ready: at the cluster's rate limit, what a rollout of
	// every Release's Deployment costs whatever releases them.
	ClusterRequests map[string]int `json:"cluster_requests"`
	SteadySeconds   float64        `json:"steady_seconds"`
	SteadyRequests  int            `json:"steady_requests"`
	SteadyWrites    int            `json:"steady_writes"`
	// SteadyHungWrites is how many of SteadyWrites were in the hung Releases' namespaces.
	SteadyHungWrites int `json:"steady_hung_writes"`
	// SteadyIndexDownloads and SteadyChartDownloads count the chart repository's answers 200 to
	// GET index.yaml and GET *.tgz in the steady state; SteadyRevalidations its answers 304.
	SteadyIndexDownloads int            `json:"steady_index_downloads"`
	SteadyChartDownloads int            `json:"steady_chart_downloads"`
	SteadyRevalidations  int            `json:"steady_revalidations"`
	SteadyByVerb         map[string]int `json:"steady_by_verb"`
	DeleteSeconds        float64        `json:"delete_seconds"`
	DeleteRequests       int            `json:"delete_requests"`
	// DeleteSkipped says the deletion was not measured (--delete=false).
	DeleteSkipped bool   `json:"delete_skipped,omitempty"`
	Error         string `json:"error,omitempty"`
}

// controllerResults is what controller.json holds.
type controllerResults struct {
	Machine  machine   `json:"machine"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Chart is the chart every Release released (--chart); empty in results written before
	// --chart existed, which released app.
	Chart string          `json:"chart"`
	Runs  []controllerRun `json:"runs"`
	// Label is what the run is for (--label), when given.
	Label string `json:"label,omitempty"`
	// Fleet are the runs of --shards and --remote.
	Fleet []fleetRun `json:"fleet,omitempty"`
	// Interrupted says the harness was stopped (SIGINT, SIGTERM) before every run was made:
	// the runs are those that ended.
	Interrupted bool `json:"interrupted,omitempty"`
}

func runControllerBench(args []string) error {
	cfg, err := parseControllerFlags(args)
	if err != nil {
		return err
	}
	for _, path := range []*string{&cfg.berth, &cfg.devcluster, &cfg.measurer, &cfg.crd} {
		abs, err := filepath.Abs(*path)
		if err != nil {
			return err
		}
		if !fileExists(abs) {
			return fmt.Errorf("%s not found: build it first (make bench builds everything)", *path)
		}
		*path = abs
	}
	if cfg.profile != "" {
		if cfg.profile, err = filepath.Abs(cfg.profile); err != nil {
			return err
		}
	}
	// A work directory of its own is removed, each run's part once the run is done: at thousands
	// of Releases a run's cluster and audit log take gigabytes.
	ownWork := cfg.work == ""
	if ownWork {
		if cfg.work, err = os.MkdirTemp("", "berth-bench-controller-"); err != nil {
			return err
		}
		defer os.RemoveAll(cfg.work)
	}
	done := func(dir string) {
		if ownWork {
			os.RemoveAll(dir)
		}
	}
	// A copy, as for the other cases: a freshly linked binary looks bigger in memory.
	if cfg.berth, err = copyBinary(cfg.berth, filepath.Join(cfg.work, "bin")); err != nil {
		return err
	}
	if cfg.concurrency == 0 {
		help, err := exec.Command(cfg.berth, "controller", "--help").Output()
		if err != nil {
			return fmt.Errorf("berth controller --help: %w", err)
		}
		if cfg.concurrency, err = flagDefault(string(help), "concurrency"); err != nil {
			return fmt.Errorf("berth controller --help: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	res := controllerResults{Machine: describeMachine(config{berth: cfg.berth, helm: ""}), Started: time.Now(), Chart: cfg.chart, Label: cfg.label}
	res.Machine.Helm = ""
	// interrupted writes the runs that ended before the harness was stopped: a long run
	// (10,000 Releases) stopped in its last part keeps what it measured.
	interrupted := func() error {
		res.Finished, res.Interrupted = time.Now(), true
		if err := res.write(cfg); err != nil {
			return err
		}
		return errInterrupted
	}
	for _, qps := range cfg.controllerQPS {
		for _, n := range cfg.releases {
			dir := filepath.Join(cfg.work, fmt.Sprintf("controller-%d-qps-%d", n, qps))
			run, err := runController(ctx, cfg, n, qps, dir)
			done(dir)
			if err != nil {
				run.Error = err.Error()
				fmt.Printf("FAILED: %v\n", err)
			}
			if ctx.Err() != nil {
				return interrupted() // the run stopped midway measured nothing whole
			}
			res.Runs = append(res.Runs, run)
			if cfg.shards > 0 {
				dir := filepath.Join(cfg.work, fmt.Sprintf("controller-%d-qps-%d-shards-%d", n, qps, cfg.shards))
				run, err := runShards(ctx, cfg, n, qps, dir)
				done(dir)
				if ctx.Err() != nil {
					return interrupted()
				}
				if err := res.addFleet(run, err); err != nil {
					return err
				}
			}
		}
		if cfg.remote > 0 {
			dir := filepath.Join(cfg.work, fmt.Sprintf("controller-%d-qps-%d-remote", cfg.remote, qps))
			run, err := runRemote(ctx, cfg, cfg.remote, qps, dir)
			done(dir)
			if ctx.Err() != nil {
				return interrupted()
			}
			if err := res.addFleet(run, err); err != nil {
				return err
			}
		}
	}
	res.Finished = time.Now()
	if err := res.write(cfg); err != nil {
		return err
	}
	return judge(missedControllerGoals(controllerGoals(res.chart(), res.Runs)), cfg.reportOnly)
}

// parseControllerFlags reads the controller case's flags; it checks their values, not the files
// they name.
func parseControllerFlags(args []string) (controllerConfig, error) {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	var cfg controllerConfig
	var releases, qps string
	fs.StringVar(&cfg.berth, "berth", "bin/berth", "berth binary")
	fs.StringVar(&cfg.devcluster, "devcluster", "bin/berth-devcluster", "devcluster binary")
	fs.StringVar(&cfg.measurer, "measurer", "bin/berth-bench-measure", "berth-bench-measure binary, which runs the controller and reads its peak memory")
	fs.StringVar(&cfg.crd, "crd", "charts/berth-controller/crds", "the controller's CustomResourceDefinitions: a file, or a directory whose every .yaml file is one")
	fs.StringVar(&cfg.chart, "chart", defaultControllerChart, "the chart every Release releases: "+strings.Join(controllerChartNames(), " or ")+" (bench/charts.go, bench/recordcharts.go)")
	fs.StringVar(&releases, "releases", "100,1000", "how many Releases each run creates, comma-separated; each runs on a devcluster of its own")
	fs.IntVar(&cfg.concurrency, "concurrency", 0, "the controller's --concurrency (default: the controller's own default)")
	fs.StringVar(&qps, "controller-qps", "20", "the devcluster controllers' requests per second (burst 1.5 times it), comma-separated: each count of Releases runs at each; upstream's 20")
	fs.DurationVar(&cfg.steady, "steady", time.Minute, "how long the controller's requests are counted after every Release is Ready")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Minute, "how long to wait for every Release to be Ready, and then gone")
	fs.StringVar(&cfg.out, "out", "bench/results", "directory for controller.json and controller.md")
	fs.StringVar(&cfg.readme, "readme", "bench/README.md", "README whose controller results section is replaced by the new table (empty: none)")
	fs.StringVar(&cfg.work, "work", "", "work directory for the clusters, the chart repository and the controller's cache (default: a new temporary directory)")
	fs.StringVar(&cfg.profile, "profile", "", "directory for the controller's CPU and allocation profiles of each run, DIR/controller-N-qps-Q/ (BERTH_PROFILE_DIR; default: none)")
	fs.IntVar(&cfg.hung, "hung", 0, "how many Releases on a chart repository that never answers (timeout 20s) each run creates before the measured ones, each in a namespace hung-NNNN")
	fs.StringVar(&cfg.interval, "interval", "", "every Release's spec.interval, a Go duration of at least 10s (default: the Releases' default)")
	fs.IntVar(&cfg.shards, "shards", 0, "also run each count of Releases split among this many controllers, each with --watch-label-selector sharding.berth.dev/key=shardI, the Releases labelled round-robin (default: none)")
	fs.IntVar(&cfg.remote, "remote", 0, "also run this many Releases released by one controller into a second devcluster through a kubeconfig Secret each (default: none)")
	fs.StringVar(&cfg.name, "name", "controller", "the results' file name in --out, without .json and .md")
	fs.StringVar(&cfg.label, "label", "", "a line that heads the results, saying what the run is for")
	fs.BoolVar(&cfg.delete, "delete", true, "measure the deletion of every Release after the steady state (false: stop there; the results say the deletion was not measured)")
	fs.BoolVar(&cfg.reportOnly, "report-only", false, reportOnlyUsage)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := checkFleetFlags(cfg); err != nil {
		return cfg, err
	}
	var err error
	if cfg.releases, err = parseCounts(releases); err != nil {
		return cfg, fmt.Errorf("--releases: %w", err)
	}
	if !slices.Contains(controllerChartNames(), cfg.chart) {
		return cfg, fmt.Errorf("--chart: want one of %s, got %q", strings.Join(controllerChartNames(), ", "), cfg.chart)
	}
	if cfg.concurrency < 0 {
		return cfg, fmt.Errorf("--concurrency must not be negative, got %d", cfg.concurrency)
	}
	if cfg.controllerQPS, err = parseCounts(qps); err != nil {
		return cfg, fmt.Errorf("--controller-qps: %w", err)
	}
	if cfg.hung < 0 {
		return cfg, fmt.Errorf("--hung must not be negative, got %d", cfg.hung)
	}
	if cfg.interval != "" {
		d, err := time.ParseDuration(cfg.interval)
		if err != nil || d < 10*time.Second {
			return cfg, fmt.Errorf("--interval: want a Go duration of at least 10s, got %q", cfg.interval)
		}
	}
	return cfg, nil
}

// parseCounts parses "100,1000".
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("want counts of at least 1 separated by commas, got %q", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// flagDefault reads the default of --name from a command's help text: "(default 4)".
func flagDefault(help, name string) (int, error) {
	for _, line := range strings.Split(help, "\n") {
		fields := strings.Fields(line)
		if !slices.Contains(fields, "--"+name) {
			continue
		}
		_, rest, ok := strings.Cut(line, "(default ")
		if !ok {
			return 0, fmt.Errorf("--%s has no default", name)
		}
		v, _, _ := strings.Cut(rest, ")")
		return strconv.Atoi(v)
	}
	return 0, fmt.Errorf("no flag --%s", name)
}

// runController measures one run: N Releases created at once against a controller already
// running, until every one is Ready; the controller's requests in the steady state after; and
// the deletion of every Release until they are gone.
func runController(ctx context.Context, cfg controllerConfig, n, qps int, dir string) (controllerRun, error) {
	run := controllerRun{Releases: n, Hung: cfg.hung, Interval: cfg.interval, Concurrency: cfg.concurrency, ControllerQPS: qps}
	opts := releaseOptions{chart: cfg.chart, interval: cfg.interval}
	cs := clusterSettings{Cases: []string{fmt.Sprintf("controller (%d Releases of %s)", n, cfg.chart)}, JobBatchPeriod: upstreamJobBatchPeriod.String(), ControllerQPS: qps}
	fmt.Printf("starting devcluster in %s: %s\n", dir, cs.describe())
	cluster, err := startCluster(ctx, config{devcluster: cfg.devcluster}, cs, dir)
	if err != nil {
		return run, err
	}
	defer cluster.stop()
	rc, err := clientcmd.BuildConfigFromFlags("", cluster.kubeconfig)
	if err != nil {
		return run, err
	}
	rc.UserAgent = harnessUserAgent
	rc.QPS, rc.Burst = 2000, 4000
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return run, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return run, err
	}
	if err := installCRDs(ctx, dyn, cfg.crd); err != nil {
		return run, err
	}
	repoURL, served, closeRepo, err := serveChart(ctx, cfg.chart, filepath.Join(dir, "repo"))
	if err != nil {
		return run, err
	}
	defer closeRepo()
	fmt.Printf("creating %d namespaces, each with a ServiceAccount allowed everything in it\n", n+cfg.hung)
	if err := createTenants(ctx, client, tenantPrefix, n); err != nil {
		return run, err
	}
	if err := createTenants(ctx, client, hungPrefix, cfg.hung); err != nil {
		return run, err
	}
	hungURL, closeHung, err := serveHung()
	if err != nil {
		return run, err
	}
	defer closeHung()

	ctl, err := startController(ctx, cfg, cluster.kubeconfig, dir)
	if err != nil {
		return run, err
	}
	defer ctl.kill()
	rw, err := watchReleases(ctx, dyn)
	if err != nil {
		return run, err
	}
	defer rw.stop()
	audit := &auditLog{path: cluster.audit}
	ctlRequests := userAgentOf("controller")

	if cfg.hung > 0 {
		// First, so that they occupy the controller's workers when the measured ones come.
		fmt.Printf("creating %d Releases on a chart repository that never answers (timeout %s)\n", cfg.hung, hungTimeout)
		hungOpts := opts
		hungOpts.timeout = hungTimeout
		if err := createReleases(ctx, dyn, hungPrefix, cfg.hung, hungURL, hungOpts); err != nil {
			return run, err
		}
	}
	fmt.Printf("creating %d Releases of the chart %s\n", n, cfg.chart)
	served.reset()
	clusterCPU, err := treeCPUSeconds(cluster.cmd.Process.Pid)
	if err != nil {
		return run, err
	}
	start := time.Now()
	if err := createReleases(ctx, dyn, tenantPrefix, n, repoURL, opts); err != nil {
		return run, err
	}
	run.CreateSeconds = time.Since(start).Seconds()
	readyAt, err := rw.until(ctx, cfg.timeout, func(c releaseCounts) bool { return c.Measured == n && c.Ready == n }, ctl.done)
	if err != nil {
		return run, fmt.Errorf("Releases Ready: %w", err)
	}
	run.ReadySeconds = readyAt.Sub(start).Seconds()
	run.LoadAverage = loadAverage()
	if cpu, err := treeCPUSeconds(cluster.cmd.Process.Pid); err == nil {
		run.ClusterCPUSecondsReady = cpu - clusterCPU
	}
	run.ChartRequests = served.total()
	atReady := served.snapshot()
	if run.PeakRSSReadyBytes, run.CPUSecondsReady, err = ctl.usage(); err != nil {
		return run, err
	}
	fmt.Printf("  %d Releases Ready after %.1fs (created in %.1fs), controller peak RSS %.0f MiB, %.1f s CPU; the cluster %.1f s CPU; load average %.1f\n",
		n, run.ReadySeconds, run.CreateSeconds, float64(run.PeakRSSReadyBytes)/(1<<20), run.CPUSecondsReady, run.ClusterCPUSecondsReady, run.LoadAverage)

	steadyEnd := readyAt.Add(cfg.steady)
	sleep(ctx, time.Until(steadyEnd))
	steadyRepo := served.snapshot().sub(atReady)
	if cfg.hung > 0 {
		fmt.Printf("  %s/app after the steady state: %s\n", namespaceOf(hungPrefix, 0), readyConditionText(ctx, dyn, namespaceOf(hungPrefix, 0)))
	}
	run.SteadyIndexDownloads, run.SteadyChartDownloads, run.SteadyRevalidations = steadyRepo[indexDownload], steadyRepo[chartDownload], steadyRepo[revalidation]
	sleep(ctx, auditSettle)
	// Every count until the steady state's end in one pass over the audit log, which at
	// thousands of Releases holds millions of lines.
	untilReady := &auditQuery{start: start, end: readyAt, matches: ctlRequests, key: byVerb}
	byResource := &auditQuery{start: start, end: readyAt, matches: ctlRequests, key: byVerbAndResource}
	steady := &auditQuery{start: readyAt, end: steadyEnd, matches: ctlRequests, key: byVerbAndResource}
	// The steady state again, by namespace: how many of the writes were the hung Releases'.
	steadyByGroup := &auditQuery{start: readyAt, end: steadyEnd, matches: ctlRequests, key: byVerbAndGroup}
	queries := []*auditQuery{untilReady, byResource, steady, steadyByGroup}
	rollouts := map[string]*auditQuery{}
	for _, name := range rolloutControllers {
		rollouts[name] = &auditQuery{start: start, end: readyAt, matches: clusterController(name), key: byVerb}
		queries = append(queries, rollouts[name])
	}
	if err := audit.countEach(queries...); err != nil {
		return run, err
	}
	run.Requests, run.RequestsByVerb, run.RequestsByResource = untilReady.Total, untilReady.Counts, byResource.Counts
	run.ClusterRequests = map[string]int{}
	for name, q := range rollouts {
		run.ClusterRequests[name] = q.Total
	}
	run.SteadySeconds = cfg.steady.Seconds()
	run.SteadyRequests, run.SteadyByVerb = steady.Total, steady.Counts
	run.SteadyWrites = writes(run.SteadyByVerb)
	run.SteadyHungWrites = hungWrites(steadyByGroup.Counts)
	fmt.Printf("  %d requests until Ready (%s); %d requests in the %s after, %d writes (%d of them for the hung Releases) %v\n",
		run.Requests, verbsText(run.RequestsByVerb), run.SteadyRequests, cfg.steady, run.SteadyWrites, run.SteadyHungWrites, run.SteadyByVerb)
	fmt.Printf("  chart repository in the steady state: %d index downloads, %d chart downloads, %d revalidations (304)\n",
		run.SteadyIndexDownloads, run.SteadyChartDownloads, run.SteadyRevalidations)
	if ctl.exited() {
		return run, errors.New("the controller exited")
	}
	if !cfg.delete {
		run.DeleteSkipped = true
		run.PeakRSSBytes = ctl.stop().PeakRSS
		fmt.Printf("  deletion not measured (--delete=false); controller peak RSS over the run %.0f MiB\n", float64(run.PeakRSSBytes)/(1<<20))
		return run, nil
	}

	fmt.Printf("deleting %d Releases\n", n+cfg.hung)
	delStart := time.Now()
	if err := deleteReleases(ctx, dyn, tenantPrefix, n); err != nil {
		return run, err
	}
	if err := deleteReleases(ctx, dyn, hungPrefix, cfg.hung); err != nil {
		return run, err
	}
	goneAt, err := rw.until(ctx, cfg.timeout, func(c releaseCounts) bool { return c.All == 0 }, ctl.done)
	if err != nil {
		return run, fmt.Errorf("Releases gone: %w", err)
	}
	run.DeleteSeconds = goneAt.Sub(delStart).Seconds()
	sleep(ctx, auditSettle)
	if run.DeleteRequests, _, err = audit.requests(delStart, goneAt, ctlRequests); err != nil {
		return run, err
	}
	p := ctl.stop()
	run.PeakRSSBytes = p.PeakRSS
	fmt.Printf("  gone after %.1fs, %d requests; controller peak RSS over the run %.0f MiB\n",
		run.DeleteSeconds, run.DeleteRequests, float64(run.PeakRSSBytes)/(1<<20))
	return run, nil
}

// rolloutControllers are the controllers of the cluster that roll a Deployment out.
var rolloutControllers = []string{"deployment-controller", "replicaset-controller"}

// clusterController matches the requests of the kube-controller-manager controller name, whose
// User-Agent ends in "/NAME".
func clusterController(name string) func(string) bool {
	return func(ua string) bool { return strings.HasSuffix(ua, "/"+name) }
}

// isWrite says whether a request of verb changes something.
func isWrite(verb string) bool {
	switch verb {
	case "get", "list", "watch":
		return false
	}
	return true
}

// writes counts the writes among requests keyed "verb resource".
func writes(byKey map[string]int) int {
	n := 0
	for k, c := range byKey {
		verb, _, _ := strings.Cut(k, " ")
		if isWrite(verb) {
			n += c
		}
	}
	return n
}

// installCRDs creates the controller's CustomResourceDefinitions (crdFiles of path) and waits
// until each is Established: the controller does not start without every kind it watches.
func installCRDs(ctx context.Context, dyn dynamic.Interface, path string) error {
	files, err := crdFiles(path)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := installCRD(ctx, dyn, f); err != nil {
			return err
		}
	}
	return nil
}

// crdFiles are path, a file, or every .yaml file in the directory path, in name order.
func crdFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	files, err := filepath.Glob(filepath.Join(path, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no .yaml file", path)
	}
	return files, nil
}

// installCRD creates the CustomResourceDefinition in the file path and waits until it is
// Established.
func installCRD(ctx context.Context, dyn dynamic.Interface, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var crd unstructured.Unstructured
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&crd.Object); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := dyn.Resource(crdResource).Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
	}
	return poll(ctx, time.Minute, func() (bool, error) {
		got, err := dyn.Resource(crdResource).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		return conditionTrue(conds, "Established"), nil
	})
}

// serveChart packages the controller chart name into a Helm repository in dir and serves it
// over HTTP on localhost until closed; served counts the requests it answered, by kind.
func serveChart(ctx context.Context, name, dir string) (string, *repoCounter, func(), error) {
	spec, err := controllerChartSpec(name)
	if err != nil {
		return "", nil, nil, err
	}
	src, err := spec.write(filepath.Join(dir, "src"))
	if err != nil {
		return "", nil, nil, err
	}
	ch, err := chart.Load(src)
	if err != nil {
		return "", nil, nil, err
	}
	pkgs := filepath.Join(dir, "packages")
	if err := os.MkdirAll(pkgs, 0o755); err != nil {
		return "", nil, nil, err
	}
	if _, err := chartutil.Save(ch, pkgs); err != nil {
		return "", nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, err
	}
	url := "http://" + ln.Addr().String()
	index, err := repo.IndexDirectory(pkgs, url)
	if err != nil {
		ln.Close()
		return "", nil, nil, err
	}
	if err := index.WriteFile(filepath.Join(pkgs, "index.yaml"), 0o644); err != nil {
		ln.Close()
		return "", nil, nil, err
	}
	served := &repoCounter{}
	srv := &http.Server{Handler: served.wrap(http.FileServer(http.Dir(pkgs)))}
	go srv.Serve(ln)
	return url, served, func() { srv.Close() }, nil
}

// The namespaces of the measured Releases are tenant-NNNN; those of the Releases on the chart
// repository that never answers hung-NNNN.
const tenantPrefix, hungPrefix = "tenant", "hung"

// namespaceOf is the namespace of the i-th Release of prefix.
func namespaceOf(prefix string, i int) string { return fmt.Sprintf("%s-%04d", prefix, i) }

// tenant is the namespace of the i-th measured Release.
func tenant(i int) string { return namespaceOf(tenantPrefix, i) }

// deployer is the ServiceAccount every Release acts as, allowed everything in its namespace.
const deployer = "deployer"

// createTenants creates n namespaces prefix-NNNN, each with the ServiceAccount deployer bound to a Role that
// allows everything in it, and waits until the cluster's controllers have given each namespace
// its default ServiceAccount and root CA ConfigMap, so that they are idle when the clock starts.
func createTenants(ctx context.Context, client kubernetes.Interface, prefix string, n int) error {
	if n == 0 {
		return nil
	}
	err := parallel(ctx, n, 32, func(ctx context.Context, i int) error {
		ns := namespaceOf(prefix, i)
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
		meta := metav1.ObjectMeta{Name: deployer, Namespace: ns}
		if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ServiceAccount %s/%s: %w", ns, deployer, err)
		}
		role := &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}
		if _, err := client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Role %s/%s: %w", ns, deployer, err)
		}
		binding := &rbacv1.RoleBinding{ObjectMeta: meta,
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: deployer},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: deployer, Namespace: ns}}}
		if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create RoleBinding %s/%s: %w", ns, deployer, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Two lists of every namespace's object a round, from the API server's cache (resourceVersion
	// 0), less often the more namespaces there are: at 10,000 they are megabytes each.
	every := max(500*time.Millisecond, time.Duration(n)*500*time.Microsecond)
	cached := func(field string) metav1.ListOptions {
		return metav1.ListOptions{FieldSelector: field, ResourceVersion: "0"}
	}
	return pollEvery(ctx, 10*time.Minute, every, func() (bool, error) {
		sas, err := client.CoreV1().ServiceAccounts("").List(ctx, cached("metadata.name=default"))
		if err != nil {
			return false, nil
		}
		cms, err := client.CoreV1().ConfigMaps("").List(ctx, cached("metadata.name=kube-root-ca.crt"))
		if err != nil {
			return false, nil
		}
		return countTenants(prefix, sas.Items) >= n && countTenants(prefix, cms.Items) >= n, nil
	})
}

func countTenants[T any, P interface {
	*T
	GetNamespace() string
}](prefix string, items []T) int {
	c := 0
	for i := range items {
		if strings.HasPrefix(P(&items[i]).GetNamespace(), prefix+"-") {
			c++
		}
	}
	return c
}

// releaseOptions are the optional fields of every Release's spec; empty ones are left out.
type releaseOptions struct {
	// chart is the chart released (default: app).
	chart             string
	interval, timeout string
	// shards, when set, labels the i-th Release for shard i mod shards (shardLabel);
	// kubeConfigSecret, when set, releases it into the cluster of that Secret's kubeconfig
	// (remoteSpec).
	shards           int
	kubeConfigSecret string
}

// releaseObject is the Release app in namespace ns: the chart opts.chart (default app) 1.0.0
// from the repository at repoURL, released into ns as its ServiceAccount deployer.
func releaseObject(ns, repoURL string, opts releaseOptions) *unstructured.Unstructured {
	name := opts.chart
	if name == "" {
		name = defaultControllerChart
	}
	spec := map[string]any{
		"serviceAccountName": deployer,
		"chart":              map[string]any{"repository": repoURL, "name": name, "version": "1.0.0"},
	}
	if opts.interval != "" {
		spec["interval"] = opts.interval
	}
	if opts.timeout != "" {
		spec["timeout"] = opts.timeout
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "berth.dev/v1alpha1",
		"kind":       "Release",
		"metadata":   map[string]any{"name": "app", "namespace": ns},
		"spec":       spec,
	}}
}

// createReleases creates the Release app in each of the n namespaces prefix-NNNN.
func createReleases(ctx context.Context, dyn dynamic.Interface, prefix string, n int, repoURL string, opts releaseOptions) error {
	return parallel(ctx, n, 64, func(ctx context.Context, i int) error {
		ns := namespaceOf(prefix, i)
		obj := releaseObject(ns, repoURL, opts)
		opts.fleet(obj, i)
		if _, err := dyn.Resource(releaseResource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Release %s/app: %w", ns, err)
		}
		return nil
	})
}

func deleteReleases(ctx context.Context, dyn dynamic.Interface, prefix string, n int) error {
	return parallel(ctx, n, 64, func(ctx context.Context, i int) error {
		ns := namespaceOf(prefix, i)
		if err := dyn.Resource(releaseResource).Namespace(ns).Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete Release %s/app: %w", ns, err)
		}
		return nil
	})
}

// parallel calls f for 0..n-1 from workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}

func poll(ctx context.Context, limit time.Duration, done func() (bool, error)) error {
	return pollEvery(ctx, limit, 500*time.Millisecond, done)
}

// pollEvery calls done every interval until it holds, fails, or limit has passed.
func pollEvery(ctx context.Context, limit, every time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", limit)
		}
		sleep(ctx, every)
		if ctx.Err() != nil {
			return errInterrupted
		}
	}
}

// conditionTrue says whether conds (status.conditions) hold condition typ with status True.
func conditionTrue(conds []any, typ string) bool {
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// readyConditionText is the Ready condition of the Release app in ns, "status reason: message",
// for the log.
func readyConditionText(ctx context.Context, dyn dynamic.Interface, ns string) string {
	obj, err := dyn.Resource(releaseResource).Namespace(ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return fmt.Sprintf("Ready %v %v: %v", m["status"], m["reason"], m["message"])
		}
	}
	return "no Ready condition"
}

// releaseReady says whether the Release obj is Ready for its current spec: status.observedGeneration
// and the Ready condition's are the object's generation, and Ready is True.
func releaseReady(obj *unstructured.Unstructured) bool {
	gen := obj.GetGeneration()
	observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if observed != gen {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		g, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		return m["status"] == "True" && g == gen
	}
	return false
}
