package hostile_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// Whatever a tenant writes, the controller must keep these bounds while it is attacked.
const (
	// maxGrowth is how far the controller's peak resident memory may rise over its idle memory.
	maxGrowth = 64 << 20
	// bystanderSlack is how much longer than its quiet baseline another namespace's Release
	// may take to become Ready during an attack.
	bystanderSlack = 10 * time.Second
	// idleCPUShare is the share of a core the controller and its children may use, once an
	// attack was stopped and named, while it has nothing else to do.
	idleCPUShare = 0.10
)

// quiet is what a controller does unattacked: its idle memory and how long a bystander
// Release, in a namespace of its own, takes to become Ready.
type quiet struct {
	t    *testing.T
	p    *controllerProcess
	c    client.Client
	repo string
	// idle is the controller's resident memory once the quiet bystander was Ready.
	idle int64
	// ready is how long the quiet bystander took to become Ready.
	ready time.Duration
	n     int
}

// quiet measures p unattacked: a bystander Release of a one-ConfigMap chart, in a namespace of
// its own, installed to Ready, then the controller's resident memory. From then on, when the
// test ends, it fails the test if the controller's peak resident memory rose more than
// maxGrowth over that idle memory.
func (p *controllerProcess) quiet(t *testing.T, env *testenv.Env) *quiet {
	t.Helper()
	q := &quiet{t: t, p: p, c: releasetest.Client(t, env)}
	q.repo = releasetest.ServeCharts(t, berthtest.PackageNewChart(t, "bystander", "0.1.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bystander}\ndata: {greeting: hello}\n",
	}))
	q.ready = q.install()
	idle, err := p.status("VmRSS")
	if err != nil {
		t.Fatalf("resident memory of berth controller: %v", err)
	}
	q.idle = idle
	t.Logf("berth controller unattacked: %d MiB resident, a bystander Ready after %v", idle>>20, q.ready.Round(time.Millisecond))
	t.Cleanup(q.checkGrowth)
	return q
}

// bystander installs another bystander Release, in a namespace of its own, while an attack
// runs, and fails the test unless it is Ready within the quiet baseline plus bystanderSlack.
func (q *quiet) bystander(t *testing.T) {
	t.Helper()
	took := q.install()
	t.Logf("a bystander Ready after %v under attack (%v unattacked)", took.Round(time.Millisecond), q.ready.Round(time.Millisecond))
	if took > q.ready+bystanderSlack {
		t.Errorf("a bystander Release took %v to become Ready under attack, over its quiet %v plus %v", took, q.ready, bystanderSlack)
	}
}

// install creates a bystander Release in a new namespace, waits until it is Ready, and returns
// how long that took.
func (q *quiet) install() time.Duration {
	q.t.Helper()
	env := testenv.New(q.t)
	releasetest.Deployer(q.t, env, "deployer")
	q.n++
	name := fmt.Sprintf("bystander-%d", q.n)
	rel := q.p.release(env.Namespace, name, `
  serviceAccountName: deployer
  chart: {repository: "`+q.repo+`", name: bystander, version: "0.1.0"}`)
	start := time.Now()
	if err := q.c.Create(q.t.Context(), rel); err != nil {
		q.t.Fatalf("create Release %s/%s: %v", env.Namespace, name, err)
	}
	releasetest.WaitFor(q.t, q.c, env.Namespace, name, "is Ready", func(rel *v1alpha1.Release) bool {
		cond := releasetest.Condition(rel, controller.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == rel.Generation
	})
	return time.Since(start)
}

// checkGrowth fails the test when the controller's peak resident memory rose more than
// maxGrowth over its idle memory.
func (q *quiet) checkGrowth() {
	peak, err := q.p.status("VmHWM")
	if err != nil {
		q.t.Errorf("peak memory of berth controller: %v", err)
		return
	}
	growth := peak - q.idle
	q.t.Logf("berth controller: peak %d MiB, %d MiB over its idle %d MiB", peak>>20, growth>>20, q.idle>>20)
	if growth > maxGrowth {
		q.t.Errorf("berth controller grew %d MiB over its idle memory, more than the %d MiB allowed", growth>>20, maxGrowth>>20)
	}
}

// noCPUAfter fails the test if, over the next d, the controller and every process it started
// use more than idleCPUShare of a core: once an attack was stopped, it costs nothing more.
func (q *quiet) noCPUAfter(t *testing.T, d time.Duration) {
	t.Helper()
	before, err := q.p.cpu()
	if err != nil {
		t.Fatalf("CPU time of berth controller: %v", err)
	}
	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-t.Context().Done():
		timer.Stop()
		return
	}
	after, err := q.p.cpu()
	if err != nil {
		t.Fatalf("CPU time of berth controller: %v", err)
	}
	used := after - before
	t.Logf("berth controller and its children: %v of CPU over %v", used, d)
	if limit := time.Duration(float64(d) * idleCPUShare); used > limit {
		t.Errorf("berth controller and its children used %v of CPU over %v once the attack was named, more than %v", used, d, limit)
	}
}

// status is a field of /proc/PID/status of the controller, in bytes (VmRSS, VmHWM).
func (p *controllerProcess) status(field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/PID/status", field)
}

// clockTicks is the unit of /proc/PID/stat's times: USER_HZ, 100 on Linux.
const clockTicks = 100

// cpu is the CPU time the controller used so far: its own, that of the children it reaped, and
// that of every process it started that still runs (a renderer it failed to stop counts too).
func (p *controllerProcess) cpu() (time.Duration, error) {
	procs, err := p.tree()
	if err != nil {
		return 0, err
	}
	var ticks int64
	for i, pid := range procs {
		f, err := procStat(pid)
		if err != nil {
			if i > 0 && errors.Is(err, os.ErrNotExist) {
				continue // a child that ended meanwhile
			}
			return 0, err
		}
		ticks += f.utime + f.stime
		if i == 0 {
			ticks += f.cutime + f.cstime
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// tree is the controller's PID followed by those of every process descended from it.
func (p *controllerProcess) tree() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	parent := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, err := procStat(pid); err == nil {
			parent[pid] = f.ppid
		}
	}
	root := p.cmd.Process.Pid
	procs := []int{root}
	for i := 0; i < len(procs); i++ {
		for pid, ppid := range parent {
			if ppid == procs[i] {
				procs = append(procs, pid)
			}
		}
	}
	return procs, nil
}

// statFields are the fields of /proc/PID/stat that cpu reads.
type statFields struct {
	ppid                         int
	utime, stime, cutime, cstime int64
}

// procStat reads /proc/PID/stat. The command name, in parentheses, may hold spaces: the fields
// are counted after its closing parenthesis.
func procStat(pid int) (statFields, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return statFields{}, err
	}
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return statFields{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	// After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17).
	f := strings.Fields(string(data[end+1:]))
	if len(f) < 15 {
		return statFields{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var s statFields
	var nums [5]int64
	for i, idx := range []int{1, 11, 12, 13, 14} {
		n, err := strconv.ParseInt(f[idx], 10, 64)
		if err != nil {
			return statFields{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		nums[i] = n
	}
	s.ppid, s.utime, s.stime, s.cutime, s.cstime = int(nums[0]), nums[1], nums[2], nums[3], nums[4]
	return s, nil
}

// attacked sets up an attack: a namespace of its own (env) with the ServiceAccount deployer,
// a client (c), berth controller started for the test with the extra flags given (p), and its
// quiet baseline (q).
func attacked(t *testing.T, flags ...string) (env *testenv.Env, c client.Client, p *controllerProcess, q *quiet) {
	t.Helper()
	env = testenv.New(t)
	c = releasetest.Client(t, env)
	releasetest.Deployer(t, env, "deployer")
	p = startController(t, env, flags...)
	return env, c, p, p.quiet(t, env)
}

// namedChart is the package of chart web 0.3.0, one ConfigMap named as its release.
func namedChart(t *testing.T) string {
	return berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {greeting: hello}\n",
	})
}
