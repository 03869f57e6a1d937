package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/kube"
)

const (
	harnessUserAgent = "berth-bench-harness"
	releaseName      = "bench"
	// toolTimeout is every tool's --timeout.
	toolTimeout = "10m"
	// gcSettle is how long after an install of new CRDs the harness waits before uninstalling:
	// the garbage collector learns of new resource types on a 30-second rediscovery, and until it
	// has, a foreground deletion of a custom resource waits for it, whatever the tool.
	gcSettle = 35 * time.Second
	// auditSettle lets the API server write the events of requests that ended with the process
	// (its watches) before they are counted.
	auditSettle = 500 * time.Millisecond
)

// ops are the operations each tool runs on a case, in order: "noop" is the upgrade run again with
// the same chart and values, which changes nothing.
var ops = []string{"install", "upgrade", "noop", "uninstall"}

// helmAtBerthLimits is Helm run at berth's client-side rate limit (kube.DefaultQPS and
// kube.DefaultBurst) instead of its own: beside Helm at its defaults, it tells what of berth's
// lead is the rate limit and what is the engine.
const helmAtBerthLimits = "helm-qps"

// tools are the tools every round runs, in the order of the first round.
var tools = []string{"berth", "helm", helmAtBerthLimits, "floor"}

// toolLabel is how the tables name a tool.
func toolLabel(tool string) string {
	if tool == helmAtBerthLimits {
		return fmt.Sprintf("helm (qps %d, burst %d)", kube.DefaultQPS, kube.DefaultBurst)
	}
	return tool
}

// toolLabels maps each tool to its label.
func toolLabels(tools []string) map[string]string {
	out := map[string]string{}
	for _, t := range tools {
		out[t] = toolLabel(t)
	}
	return out
}

// roundOrder is the order in which round runs the tools: round i starts with tools[i mod n] and
// goes on cyclically, so that over n rounds each tool runs once in each place.
func roundOrder(tools []string, round int) []string {
	n := len(tools)
	out := make([]string, 0, n)
	for k := range n {
		out = append(out, tools[(round+k)%n])
	}
	return out
}

// roundOrders is the order of the tools in each round, the warm-up (round 0) first.
func roundOrders(tools []string, rounds int) [][]string {
	out := make([][]string, 0, rounds+1)
	for round := 0; round <= rounds; round++ {
		out = append(out, roundOrder(tools, round))
	}
	return out
}

// benchCase is a chart and how it is installed.
type benchCase struct {
	Name  string
	Chart chartSpec
	// Hooks is the chart's hooks value; hooks-base runs the hooks chart without them.
	Hooks bool
	path  string
	// objects are the release's objects as rendered (names and kinds), for the deletion watch.
	objects []*unstructured.Unstructured
}

// sample is one operation of one tool.
type sample struct {
	Case  string `json:"case"`
	Tool  string `json:"tool"`
	Round int    `json:"round"` // 0 is the warm-up, not counted
	// Position is the tool's place in its round's order, 1 for the first.
	Position     int     `json:"position"`
	Op           string  `json:"op"`
	Seconds      float64 `json:"seconds"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	// PeakAnonBytes and PeakFileBytes split the peak, sampled every 2 ms: what the tool
	// allocated, and the pages of files it mapped (its binary's, mostly).
	PeakAnonBytes int64 `json:"peak_anon_bytes,omitempty"`
	PeakFileBytes int64 `json:"peak_file_bytes,omitempty"`
	// CPUMS is the processor time the tool took, user and system, in milliseconds: on a machine
	// whose processors the API server shares, what the tool computes delays what it waits for.
	CPUMS          float64        `json:"cpu_ms,omitempty"`
	APIRequests    int            `json:"api_requests"`
	RequestsByVerb map[string]int `json:"requests_by_verb"`
	// Seconds is, for uninstall, until the last of the release's objects was gone (or the tool
	// exited, if that was later); ToolSeconds until the tool exited.
	ToolSeconds float64 `json:"tool_seconds"`
	// DeletionLatencyMS is, for uninstall, the time from the last object's disappearance, as the
	// harness's watch saw it, to the tool's exit: negative when the tool exited before.
	DeletionLatencyMS *float64 `json:"deletion_latency_ms,omitempty"`
	// SplitMS splits the time until the tool returned by what it waited for (splitTime).
	SplitMS map[string]float64 `json:"split_ms,omitempty"`
	Error   string             `json:"error,omitempty"`
}

type harness struct {
	cfg        config
	kubeconfig string
	env        []string
	dynamic    dynamic.Interface
	client     kubernetes.Interface
	mapper     *restmapper.DeferredDiscoveryRESTMapper
	audit      *auditLog
	log        io.Writer
	samples    []sample
}

func newHarness(cfg config, kubeconfig, auditPath string, log io.Writer) (*harness, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = harnessUserAgent
	rc.QPS, rc.Burst = 200, 400
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	home := filepath.Join(cfg.work, "home")
	env := []string{
		"KUBECONFIG=" + kubeconfig,
		"HOME=" + home,
		"HELM_CONFIG_HOME=" + filepath.Join(home, "helm", "config"),
		"HELM_CACHE_HOME=" + filepath.Join(home, "helm", "cache"),
		"HELM_DATA_HOME=" + filepath.Join(home, "helm", "data"),
		"NO_COLOR=1",
	}
	return &harness{cfg: cfg, kubeconfig: kubeconfig, env: env, dynamic: dyn, client: cs, log: log,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery())),
		audit:  &auditLog{path: auditPath}}, nil
}

// prepare writes the case's chart and renders it for the names of its objects.
func (h *harness) prepare(ctx context.Context, c *benchCase) error {
	path, err := c.Chart.write(filepath.Join(h.cfg.work, "charts"))
	if err != nil {
		return err
	}
	c.path = path
	ch, err := chart.Load(path)
	if err != nil {
		return err
	}
	r, err := chart.Render(ctx, ch, map[string]any{"hooks": c.Hooks}, chart.RenderOptions{ReleaseName: releaseName, Namespace: "default"})
	if err != nil {
		return fmt.Errorf("chart %s: %w", c.Chart.Name, err)
	}
	if len(r.Resources) != c.Chart.Objects {
		return fmt.Errorf("chart %s renders %d objects, want %d", c.Chart.Name, len(r.Resources), c.Chart.Objects)
	}
	c.objects = r.Resources
	return nil
}

// runCase runs every round of a case: round 0 warms up, then each round runs every tool in turn,
// in the order roundOrder gives.
func (h *harness) runCase(ctx context.Context, c *benchCase) error {
	if err := h.prepare(ctx, c); err != nil {
		return err
	}
	for round := 0; round <= h.cfg.pairs; round++ {
		for i, tool := range roundOrder(h.cfg.tools, round) {
			if err := h.runTool(ctx, c, tool, round, i+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// runTool takes one tool through install, upgrade and uninstall of the case in a fresh namespace;
// position is its place in the round. A failed operation is recorded and ends the tool's round;
// an error is returned only when the cluster could not be prepared or cleaned.
func (h *harness) runTool(ctx context.Context, c *benchCase, tool string, round, position int) error {
	ns := fmt.Sprintf("bench-%s-%s-%d", c.Name, tool, round)
	if err := h.createNamespace(ctx, ns); err != nil {
		return err
	}
	var installed time.Time
	for _, op := range ops {
		if op == "uninstall" && c.Chart.CRDs > 0 {
			sleep(ctx, time.Until(installed.Add(gcSettle)))
		}
		var dw *deletionWatch
		if op == "uninstall" {
			w, err := h.watchDeletion(ctx, ns, c.objects)
			if err != nil {
				return err
			}
			dw = w
		}
		env, profile := h.env, ""
		if h.cfg.profile != "" && round == 0 && tool == "berth" {
			// The warm-up round is not counted: profiling it costs the measurement nothing.
			profile = filepath.Join(h.cfg.profile, c.Name+"-"+op)
			if err := os.MkdirAll(profile, 0o755); err != nil {
				return err
			}
			env = append(slices.Clone(env), "BERTH_PROFILE_DIR="+profile)
		}
		p := runProcess(ctx, h.cfg.measurer, env, h.command(tool, op, c, ns)...)
		if profile != "" {
			if err := os.WriteFile(filepath.Join(profile, "output.txt"), []byte(p.Output), 0o644); err != nil {
				return err
			}
		}
		if op == "install" {
			installed = p.Start
		}
		s := sample{Case: c.Name, Tool: tool, Round: round, Position: position, Op: op, Seconds: p.Wall().Seconds(), ToolSeconds: p.Wall().Seconds(),
			PeakRSSBytes: p.PeakRSS, PeakAnonBytes: p.PeakAnon, PeakFileBytes: p.PeakFile,
			CPUMS: float64(p.CPU) / float64(time.Millisecond)}
		if p.Err != nil {
			s.Error = p.Err.Error()
		}
		if dw != nil {
			h.untilGone(ctx, dw, p, &s)
			dw.stop()
		}
		sleep(ctx, auditSettle)
		q := &auditQuery{start: p.Start, end: p.End, matches: userAgentOf(tool), key: byVerb, keep: true}
		if err := h.audit.countEach(q); err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		s.APIRequests, s.RequestsByVerb = q.Total, q.Counts
		s.SplitMS = splitTime(p.Start, p.End, q.Events)
		h.samples = append(h.samples, s)
		h.logSample(s)
		if p.Err != nil {
			break
		}
	}
	return h.cleanup(ctx, c, ns)
}

// goneTimeout bounds how long the harness waits, after an uninstall returned, for the release's
// last object to go: as long as the tools' own --timeout.
const goneTimeout = 10 * time.Minute

// untilGone waits, after a tool's uninstall p returned, until the watch dw has seen every object
// of the release go, and records in s the time until then and the deletion latency. A tool that
// failed gets a short grace only, for its deletion latency.
func (h *harness) untilGone(ctx context.Context, dw *deletionWatch, p process, s *sample) {
	limit := goneTimeout
	if p.Err != nil {
		limit = 5 * time.Second
	}
	last, missing := dw.lastGone(ctx, limit)
	if len(missing) > 0 {
		slices.Sort(missing)
		msg := fmt.Sprintf("%d of the release's objects not gone %s after the tool returned (%s)", len(missing), limit, strings.Join(missing[:min(3, len(missing))], ", "))
		fmt.Fprintln(h.log, "  "+msg)
		if s.Error == "" {
			s.Error = msg
		}
		return
	}
	ms := float64(p.End.Sub(last).Microseconds()) / 1000
	s.DeletionLatencyMS = &ms
	if last.After(p.End) {
		s.Seconds = last.Sub(p.Start).Seconds()
	}
}

func (h *harness) logSample(s sample) {
	round := "warm-up"
	if s.Round > 0 {
		round = "round " + strconv.Itoa(s.Round)
	}
	line := fmt.Sprintf("%-10s %-7s %-9s %-8s %7.2fs  rss %4.0f MiB  %4d requests", s.Case, round, s.Op, s.Tool,
		s.Seconds, float64(s.PeakRSSBytes)/(1<<20), s.APIRequests)
	if s.DeletionLatencyMS != nil {
		line += fmt.Sprintf("  returned after %.2fs, deletion latency %.0f ms", s.ToolSeconds, *s.DeletionLatencyMS)
	}
	if s.Error != "" {
		line += "\n  FAILED: " + s.Error
	}
	fmt.Fprintln(h.log, line)
}

// command is the tool's command line for op; berth and Helm get the same flags, and Helm at
// berth's rate limit berth's --qps and --burst-limit besides.
func (h *harness) command(tool, op string, c *benchCase, ns string) []string {
	hooks := "hooks=" + strconv.FormatBool(c.Hooks)
	switch tool {
	case "floor":
		gen := "1"
		if op == "upgrade" || op == "noop" {
			op, gen = "upgrade", "2" // the floor's no-op applies every object again
		}
		return []string{h.cfg.self, "floor", "--op", op, "--chart", c.path, "--release", releaseName,
			"--namespace", ns, "--kubeconfig", h.kubeconfig, "--generation", gen, "--hooks=" + strconv.FormatBool(c.Hooks),
			"--ordered=" + strconv.FormatBool(c.Chart.Ordered)}
	}
	bin := h.cfg.berth
	if tool == "helm" || tool == helmAtBerthLimits {
		bin = h.cfg.helm
	}
	var args []string
	switch op {
	case "install":
		args = []string{bin, "install", releaseName, c.path, "-n", ns, "--wait", "--timeout", toolTimeout,
			"--set", "generation=1", "--set", hooks}
	case "upgrade", "noop":
		args = []string{bin, "upgrade", releaseName, c.path, "-n", ns, "--wait", "--timeout", toolTimeout,
			"--set", "generation=2", "--set", hooks}
	default:
		args = []string{bin, "uninstall", releaseName, "-n", ns, "--wait", "--cascade=foreground", "--timeout", toolTimeout}
	}
	if tool == helmAtBerthLimits {
		args = append(args, "--qps", strconv.Itoa(kube.DefaultQPS), "--burst-limit", strconv.Itoa(kube.DefaultBurst))
	}
	if c.Chart.Ordered && tool == "berth" {
		// Helm v4.3 has no --wait=ordered: it applies the chart at once, as it always does.
		args = append(args, "--wait=ordered")
	}
	return args
}

// createNamespace creates ns and waits for its default ServiceAccount, so that no tool pays for
// a new namespace's setup.
func (h *harness) createNamespace(ctx context.Context, ns string) error {
	_, err := h.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := h.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// cleanup deletes the namespace and the chart's CRDs and waits until they are gone, so that the
// next run starts from the same cluster.
func (h *harness) cleanup(ctx context.Context, c *benchCase, ns string) error {
	crds := h.dynamic.Resource(crdResource)
	var names []string
	for i := range c.Chart.CRDs {
		_, plural := widgetKind(i)
		names = append(names, plural+"."+crdGroup)
	}
	for _, name := range names {
		if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete CRD %s: %w", name, err)
		}
	}
	// Pods left by hook Jobs would hold the namespace for their grace period.
	zero := int64(0)
	if err := h.client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete pods of %s: %w", ns, err)
	}
	if err := h.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			if _, err := crds.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		_, err := h.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s and the chart's CRDs not gone: %w", ns, err)
	}
	if len(names) > 0 {
		h.mapper.Reset()
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

var errInterrupted = errors.New("interrupted")

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
