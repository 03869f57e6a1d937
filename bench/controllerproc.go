package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// controllerProcess is the controller running under berth-bench-measure.
type controllerProcess struct {
	cmd    *exec.Cmd
	report string
	done   chan struct{}
	log    *os.File
}

// startController starts "berth controller" against kubeconfig under berth-bench-measure, its
// output into dir/controller.log, and waits until it is ready (its /readyz).
func startController(ctx context.Context, cfg controllerConfig, kubeconfig, dir string) (*controllerProcess, error) {
	return startNamedController(ctx, cfg, kubeconfig, dir, "controller", nil)
}

// startNamedController is startController for one controller of several, named name (its log
// dir/NAME.log, its cache dir/NAME-cache), with extra flags.
func startNamedController(ctx context.Context, cfg controllerConfig, kubeconfig, dir, name string, extra []string) (*controllerProcess, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	probe := ln.Addr().String()
	ln.Close()
	args := []string{cfg.berth, "controller", "--kubeconfig", kubeconfig, "--metrics-bind-address", "0",
		"--health-probe-bind-address", probe, "--cache-dir", filepath.Join(dir, name+"-cache"),
		"--concurrency", strconv.Itoa(cfg.concurrency)}
	args = append(args, extra...)
	home := "home"
	if name != "controller" {
		home += "-" + name
	}
	env := []string{"HOME=" + filepath.Join(dir, home)}
	if cfg.profile != "" {
		// One directory a run, named as its work directory: controller-N-qps-Q (and the
		// controller's name, when a run has several).
		p := filepath.Join(cfg.profile, filepath.Base(dir))
		if name != "controller" {
			p = filepath.Join(p, name)
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, err
		}
		env = append(env, "BERTH_PROFILE_DIR="+p)
	}
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	c := &controllerProcess{report: filepath.Join(dir, name+"-measure.json"), done: make(chan struct{}), log: log}
	c.cmd = exec.Command(cfg.measurer, append([]string{"--report", c.report, "--"}, args...)...)
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = log, log
	fmt.Printf("starting %s (log: %s)\n", strings.Join(args[1:], " "), log.Name())
	if err := c.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	err = poll(ctx, 2*time.Minute, func() (bool, error) {
		if c.exited() {
			return false, fmt.Errorf("the controller exited; see %s", log.Name())
		}
		resp, err := http.Get("http://" + probe + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		c.kill()
		return nil, err
	}
	return c, nil
}

func (c *controllerProcess) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// pid is the controller's process id: berth-bench-measure's child.
func (c *controllerProcess) pid() (int, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", c.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(data)); len(f) > 0 {
			return strconv.Atoi(f[0])
		}
	}
	return 0, errors.New("the controller's process not found")
}

// usage reads the controller's peak resident memory so far (VmHWM) and the CPU time it used.
func (c *controllerProcess) usage() (int64, float64, error) {
	pid, err := c.pid()
	if err != nil {
		return 0, 0, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	hwm, err := statusField(string(status), "VmHWM")
	if err != nil {
		return 0, 0, err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	cpu, err := cpuSeconds(string(stat))
	return hwm, cpu, err
}

// statusField reads a size field of /proc/PID/status ("VmHWM:   123456 kB") in bytes.
func statusField(status, name string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != name {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: unexpected %q", name, v)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb * 1024, err
	}
	return 0, fmt.Errorf("no %s in the process status", name)
}

// treeCPUSeconds is the CPU time that the process pid and its descendants have used: what the
// cluster's components (API server, etcd, controllers) cost, all children of the devcluster.
func treeCPUSeconds(pid int) (float64, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, err
	}
	parent := map[int]int{}
	cpu := map[int]float64{}
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // gone meanwhile
		}
		p, ppid, secs, err := parseStat(string(data))
		if err != nil {
			continue
		}
		parent[p], cpu[p] = ppid, secs
	}
	return sumTree(pid, parent, cpu), nil
}

// sumTree adds up cpu over pid and its descendants, by parent.
func sumTree(pid int, parent map[int]int, cpu map[int]float64) float64 {
	total := 0.0
	for p, secs := range cpu {
		for q := p; q > 1; q = parent[q] {
			if q == pid {
				total += secs
				break
			}
		}
	}
	return total
}

// parseStat reads the process id, parent process id and CPU seconds of a /proc/PID/stat line.
func parseStat(stat string) (pid, ppid int, cpu float64, err error) {
	first, _, _ := strings.Cut(stat, " ")
	if pid, err = strconv.Atoi(first); err != nil {
		return 0, 0, 0, err
	}
	i := strings.LastIndex(stat, ")")
	if i < 0 {
		return 0, 0, 0, errors.New("unexpected /proc/PID/stat")
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 2 {
		return 0, 0, 0, errors.New("unexpected /proc/PID/stat")
	}
	if ppid, err = strconv.Atoi(f[1]); err != nil {
		return 0, 0, 0, err
	}
	cpu, err = cpuSeconds(stat)
	return pid, ppid, cpu, err
}

// loadAverage is the machine's load average over the last minute (/proc/loadavg).
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// clockTicks is the kernel's USER_HZ, in which /proc/PID/stat counts CPU time.
const clockTicks = 100

// cpuSeconds reads the user and system CPU time of /proc/PID/stat.
func cpuSeconds(stat string) (float64, error) {
	// The command name (field 2) is in parentheses and may hold spaces: count from after it.
	i := strings.LastIndex(stat, ")")
	if i < 0 {
		return 0, errors.New("unexpected /proc/PID/stat")
	}
	f := strings.Fields(stat[i+1:])
	// utime and stime are fields 14 and 15; f[0] is field 3.
	if len(f) < 13 {
		return 0, errors.New("unexpected /proc/PID/stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return float64(utime+stime) / clockTicks, nil
}

// stop asks the controller to stop (SIGTERM, through berth-bench-measure) and returns what
// berth-bench-measure measured.
func (c *controllerProcess) stop() process {
	c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
	case <-time.After(time.Minute):
		c.cmd.Process.Kill()
		<-c.done
	}
	c.log.Close()
	var p process
	var m measurement
	data, err := os.ReadFile(c.report)
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		p.Err = fmt.Errorf("no measurement of the controller: %w", err)
		return p
	}
	p.Start, p.End, p.PeakRSS = m.Start, m.End, m.PeakRSS
	return p
}

func (c *controllerProcess) kill() {
	if !c.exited() {
		c.cmd.Process.Kill()
		<-c.done
	}
	c.log.Close()
}

// releaseWatch follows every Release of the cluster: how many exist and how many are Ready.
type releaseWatch struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	ready  map[string]bool
	// counts are ready's, kept as it changes: a change costs the same at any number of
	// Releases.
	counts  releaseCounts
	changed chan struct{}
}

// put records whether the Release key ("namespace/name") is Ready.
func (rw *releaseWatch) put(key string, ready bool) {
	if old, ok := rw.ready[key]; ok {
		rw.counts = rw.counts.without(key, old)
	}
	rw.ready[key] = ready
	rw.counts = rw.counts.with(key, ready)
}

// remove forgets the Release key.
func (rw *releaseWatch) remove(key string) {
	if old, ok := rw.ready[key]; ok {
		rw.counts = rw.counts.without(key, old)
		delete(rw.ready, key)
	}
}

func watchReleases(ctx context.Context, dyn dynamic.Interface) (*releaseWatch, error) {
	wctx, cancel := context.WithCancel(ctx)
	rw := &releaseWatch{cancel: cancel, ready: map[string]bool{}, changed: make(chan struct{}, 1)}
	inf := dynamicinformer.NewFilteredDynamicInformer(dyn, releaseResource, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	set := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			rw.mu.Lock()
			rw.put(u.GetNamespace()+"/"+u.GetName(), releaseReady(u))
			rw.mu.Unlock()
			rw.notify()
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				rw.mu.Lock()
				rw.remove(u.GetNamespace() + "/" + u.GetName())
				rw.mu.Unlock()
				rw.notify()
			}
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	go inf.Run(wctx.Done())
	select {
	case <-reg.HasSyncedChecker().Done():
	case <-wctx.Done():
		cancel()
		return nil, errInterrupted
	}
	return rw, nil
}

func (rw *releaseWatch) notify() {
	select {
	case rw.changed <- struct{}{}:
	default:
	}
}

// releaseCounts are what the watch sees: every Release (All), the measured ones (those of the
// tenant namespaces) and how many of those are Ready. The hung Releases count in All alone.
type releaseCounts struct {
	All, Measured, Ready int
}

// countReleases counts ready, Ready by "namespace/name".
func countReleases(ready map[string]bool) releaseCounts {
	var c releaseCounts
	for key, r := range ready {
		c = c.with(key, r)
	}
	return c
}

// with counts one more Release, key ("namespace/name"), Ready or not.
func (c releaseCounts) with(key string, ready bool) releaseCounts {
	return c.plus(key, ready, 1)
}

// without counts one Release fewer, key, as it was counted.
func (c releaseCounts) without(key string, ready bool) releaseCounts {
	return c.plus(key, ready, -1)
}

func (c releaseCounts) plus(key string, ready bool, d int) releaseCounts {
	c.All += d
	if strings.HasPrefix(key, tenantPrefix+"-") {
		c.Measured += d
		if ready {
			c.Ready += d
		}
	}
	return c
}

// until waits up to limit for done to hold and returns when it first did, as the watch saw it;
// it gives up when exited is closed.
func (rw *releaseWatch) until(ctx context.Context, limit time.Duration, done func(releaseCounts) bool, exited <-chan struct{}) (time.Time, error) {
	timeout := time.NewTimer(limit)
	defer timeout.Stop()
	for {
		now := time.Now()
		rw.mu.Lock()
		c := rw.counts
		rw.mu.Unlock()
		if done(c) {
			return now, nil
		}
		select {
		case <-rw.changed:
		case <-exited:
			return time.Time{}, errors.New("the controller exited")
		case <-timeout.C:
			return time.Time{}, fmt.Errorf("not after %s: %d Releases, %d of them measured, %d of those Ready", limit, c.All, c.Measured, c.Ready)
		case <-ctx.Done():
			return time.Time{}, errInterrupted
		}
	}
}

func (rw *releaseWatch) stop() { rw.cancel() }
