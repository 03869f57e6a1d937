package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// c4Chart is a chart with a pre-install/pre-upgrade hook Job (migrate, deleted before its next
// run and once it succeeded), a post-install hook Job (notify, deleted once it succeeded and
// never before a run: a second run is not allowed while one may exist), a pre-delete hook Job
// (drain), a Deployment and two ConfigMaps, one of which shows the values' version and the
// revision. Every hook runs for hookRun.
func c4Chart(t *testing.T) string {
	hook := func(name, events, policy string) string {
		return fmt.Sprintf(`---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-%s
  labels:
    app.kubernetes.io/instance: {{ .Release.Name }}
    c4.berth.dev/hook: %s
    c4.berth.dev/revision: {{ .Release.Revision | quote }}
  annotations:
    helm.sh/hook: %s
    helm.sh/hook-delete-policy: %s
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {devcluster.berth.dev/run: {{ .Values.hookRun | quote }}}}
    spec:
      restartPolicy: Never
      containers: [{name: hook, image: example.invalid/hook}]
`, name, name, events, policy)
	}
	return berthtest.WriteChart(t, "app", map[string]string{
		"values.yaml": "version: 1\nhookRun: 1s\n",
		"templates/hooks.yaml": hook("migrate", "pre-install,pre-upgrade", "before-hook-creation,hook-succeeded") +
			hook("notify", "post-install", "hook-succeeded") +
			hook("drain", "pre-delete", "before-hook-creation,hook-succeeded"),
		"templates/app.yaml": `
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  labels: {app.kubernetes.io/instance: {{ .Release.Name }}}
data: {version: {{ .Values.version | quote }}, revision: {{ .Release.Revision | quote }}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
  labels: {app.kubernetes.io/instance: {{ .Release.Name }}}
data: {greeting: hello}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
  labels: {app.kubernetes.io/instance: {{ .Release.Name }}}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec: {containers: [{name: app, image: example.invalid/app}]}
`,
	})
}

// c4Kills is how many times the controller is killed; at least c4MinMid of the kills must land
// while an operation of the killed controller is under way.
const (
	c4Kills  = 20
	c4MinMid = 15
)

// c4Action is what a user does to the Releases once they converged after a kill, while the
// restarted controller runs: the operations it starts are what the next kill lands in.
type c4Action struct {
	// kill is the kill after which the action is taken.
	kill int
	// upgrade sets the values' version of Releases; remove deletes Releases.
	upgrade map[string]int
	remove  []string
}

var c4Actions = []c4Action{
	{kill: 2, upgrade: map[string]int{"alpha": 2, "bravo": 2}, remove: []string{"charlie"}},
	{kill: 6, upgrade: map[string]int{"alpha": 3}, remove: []string{"delta"}},
	{kill: 10, upgrade: map[string]int{"bravo": 3, "echo": 2}},
	{kill: 14, upgrade: map[string]int{"alpha": 4}, remove: []string{"echo"}},
	{kill: 17, upgrade: map[string]int{"alpha": 5, "bravo": 4}},
}

// c4Seed is the seed of the kill moments: BERTH_C4_SEED, or the time.
func c4Seed(t *testing.T) uint64 {
	if s := os.Getenv("BERTH_C4_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BERTH_C4_SEED=%q: want a number", s)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

func TestC4ControllerKilledMidOperationConverges(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	releasetest.ServiceAccount(t, env, "deployer", releasetest.Everything)
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, c4Chart(t))
	seed := c4Seed(t)
	t.Logf("seed %d (BERTH_C4_SEED=%d repeats these kill moments)", seed, seed)
	rnd := rand.New(rand.NewPCG(seed, seed))
	obs := observe(t, env)
	ctl := newController(t, env)

	names := []string{"alpha", "bravo", "charlie", "delta", "echo"}
	version := map[string]int{}
	for _, name := range names {
		version[name] = 1
		if err := c.Create(t.Context(), releaseOf(t, env.Namespace, name, repo.URL, "app", "deployer", "{version: 1}")); err != nil {
			t.Fatal(err)
		}
	}
	removed := map[string]bool{}
	mid := 0
	ctl.start()
	for kill := 1; kill <= c4Kills; kill++ {
		pid := ctl.cmd.Process.Pid
		at := killMoment(t, env, rnd, pid)
		ctl.running()
		ctl.kill()
		under := operationsOf(t, env, pid)
		if len(under) > 0 {
			mid++
		}
		t.Logf("kill %d: %s; operations under way: %v", kill, at, under)
		// After each restart, every Release converges before anything else changes.
		ctl.start()
		c4Converge(t, env, c, names, version, removed, kill)
		if kill == c4Kills {
			break
		}
		acted := false
		for _, a := range c4Actions {
			if a.kill != kill {
				continue
			}
			acted = true
			for name, v := range a.upgrade {
				version[name] = v
				patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"values":{"version":%d}}}`, v))
				if err := c.Patch(t.Context(), &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name}}, patch); err != nil {
					t.Fatalf("upgrade %s: %v", name, err)
				}
			}
			for _, name := range a.remove {
				removed[name] = true
				if err := c.Delete(t.Context(), &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name}}); err != nil {
					t.Fatalf("delete %s: %v", name, err)
				}
			}
		}
		if !acted {
			// So that the next kill has an operation to land in: a change of a value the chart
			// does not use, to alpha or bravo (never deleted).
			name := []string{"alpha", "bravo"}[kill%2]
			patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"values":{"change":%d}}}`, kill))
			if err := c.Patch(t.Context(), &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name}}, patch); err != nil {
				t.Fatalf("change %s: %v", name, err)
			}
		}
	}
	t.Logf("%d of %d kills landed mid-operation", mid, c4Kills)
	if mid < c4MinMid {
		t.Errorf("%d of %d kills landed mid-operation, want at least %d", mid, c4Kills, c4MinMid)
	}
	ctl.running()
	t.Logf("%d hook runs observed", obs.count())
	for _, p := range obs.hookProblems() {
		t.Error(p)
	}
}

// c4Converge waits until, after kill, every Release converged: a deleted one is gone, every other
// is Ready at its latest generation, its last Helm record deployed with the values' version; and
// until nothing is left that c4Problems names (a pending record, a journal, a lease, a hook Job,
// an object of a deleted Release). It fails the test when they do not within the wait's timeout.
func c4Converge(t *testing.T, env *testenv.Env, c client.Client, names []string, version map[string]int, removed map[string]bool, kill int) {
	t.Helper()
	for _, name := range names {
		if removed[name] {
			releasetest.WaitGone(t, c, env.Namespace, name)
			continue
		}
		want := strconv.Itoa(version[name])
		releasetest.WaitFor(t, c, env.Namespace, name, fmt.Sprintf("is Ready at its latest generation and values after kill %d", kill), func(rel *v1alpha1.Release) bool {
			if !isReady(rel) {
				return false
			}
			last, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).Last(t.Context(), name)
			if err != nil || last.Version != rel.Status.Revision || last.Info.Status != release.StatusDeployed {
				return false
			}
			cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), name+"-config", metav1.GetOptions{})
			return err == nil && cm.Data["version"] == want
		})
	}
	var problems []string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, releasetest.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		problems = c4Problems(ctx, env, names, removed)
		return len(problems) == 0, nil
	})
	if err != nil {
		t.Fatalf("after kill %d, the Releases are Ready but not converged: %v\n  %s", kill, err, strings.Join(problems, "\n  "))
	}
}

// killMoment waits for a moment to kill the controller process pid: a random delay, drawn from
// rnd, after the first operation of the process is seen under way (its journal written by the
// process). The delay spans a hook, the applies and the waits of an operation of the chart, so
// the kills land in every kind of step. When no operation is under way as it ends, the moment is
// the next journal write of an operation (its start); when none starts within c4Idle, the kill
// lands between operations. It never lets the operations under way all end: once each of them
// has done every step but its last, one of them while watched, it is the moment at once. It
// returns what it waited for.
func killMoment(t *testing.T, env *testenv.Env, rnd *rand.Rand, pid int) string {
	t.Helper()
	after := time.Duration(rnd.Int64N(int64(2 * time.Second)))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// Journals, from those there now: every write of one is seen.
	ops := journalsOf{pid: pid, running: map[string]opStage{}}
	journals, err := env.Client.CoreV1().Secrets(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=berth"})
	if err != nil {
		t.Fatalf("list journals: %v", err)
	}
	for _, sec := range journals.Items {
		ops.see(watch.Event{Type: watch.Added, Object: &sec})
	}
	jw, err := env.Client.CoreV1().Secrets(env.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: "owner=berth", ResourceVersion: journals.ResourceVersion})
	if err != nil {
		t.Fatalf("watch journals: %v", err)
	}
	defer jw.Stop()
	var delay, idle <-chan time.Time
	for {
		if delay == nil && ops.underWay() {
			delay = time.After(after)
		}
		select {
		case e, ok := <-jw.ResultChan():
			if !ok {
				t.Fatalf("the watch of journals ended (%v under way)", ops.names())
			}
			if !ops.see(e) {
				continue
			}
			if ops.ending() {
				return fmt.Sprintf("as the operations under way (%v) each had every step but the last done", ops.names())
			}
			if ops.waited && ops.underWay() {
				return fmt.Sprintf("at a journal write of %v, none under way when %s had passed", ops.names(), after)
			}
		case <-delay:
			if ops.underWay() {
				return fmt.Sprintf("%s after an operation started, with %v under way", after, ops.names())
			}
			// None under way: the moment is the next journal write of the process.
			ops.waited = true
			idle = time.After(c4Idle)
		case <-idle:
			return fmt.Sprintf("between operations: none under way when %s had passed, nor within %s after", after, c4Idle)
		case <-ctx.Done():
			t.Fatalf("no operation of the controller was under way within 2m")
		}
	}
}

// c4Idle is how long a kill moment waits for an operation to start once the one it aimed at
// ended.
const c4Idle = 20 * time.Second

// journalsOf follows the journals that the controller process pid writes: an operation of the
// process is under way while its journal, last written by the process, is there.
type journalsOf struct {
	pid int
	// running are the releases whose journal the process wrote last, by how far the operation is.
	running map[string]opStage
	// waited says that the moment came while no operation was under way.
	waited bool
}

// see takes in a watch event of a journal; it reports whether the event was one of the
// process's operations.
func (o *journalsOf) see(e watch.Event) bool {
	sec, ok := e.Object.(*corev1.Secret)
	if !ok || sec.Type != release.JournalSecretType {
		return false
	}
	name := sec.Labels["name"]
	j, mine := o.journal(sec)
	if e.Type == watch.Deleted || !mine {
		_, was := o.running[name]
		delete(o.running, name)
		return was
	}
	prev, was := o.running[name]
	switch {
	case j.Plan == nil || len(j.Steps) < len(j.Plan.Steps)-1:
		o.running[name] = working
	case was && prev == working:
		o.running[name] = lastStep
	case !was:
		o.running[name] = resumedAtLastStep
	}
	return true
}

// opStage is how far an operation under way is.
type opStage int

const (
	// working: steps before the last are left.
	working opStage = iota
	// lastStep: every step but the last was done while the operation was watched.
	lastStep
	// resumedAtLastStep: the operation was first seen with every step but the last done (it
	// finishes an operation that an earlier kill interrupted there, or it began unwatched).
	resumedAtLastStep
)

// journal decodes the journal of sec and reports whether the process wrote it and it runs.
func (o *journalsOf) journal(sec *corev1.Secret) (*release.Journal, bool) {
	var j release.Journal
	if err := json.Unmarshal(sec.Data["journal"], &j); err != nil {
		return nil, false
	}
	return &j, j.State == release.JournalRunning && strings.Contains(j.Holder, fmt.Sprintf("(pid %d on host ", o.pid))
}

func (o *journalsOf) underWay() bool { return len(o.running) > 0 }

// ending reports whether operations are under way, each has done every step but its last, and
// one of them got there while watched. (One only seen at its last step is left to end: else a
// kill there, and the next one on its resumption, would never let it.)
func (o *journalsOf) ending() bool {
	watched := false
	for _, s := range o.running {
		if s == working {
			return false
		}
		watched = watched || s == lastStep
	}
	return watched
}

func (o *journalsOf) names() []string { return slices.Sorted(maps.Keys(o.running)) }

// operationsOf lists the releases whose operation the killed controller process pid left under
// way: their journal is there, running, and the process wrote it last. As the process is gone,
// that is what was under way when it was killed.
func operationsOf(t *testing.T, env *testenv.Env, pid int) []string {
	t.Helper()
	secrets, err := env.Client.CoreV1().Secrets(env.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=berth"})
	if err != nil {
		t.Fatalf("list journals: %v", err)
	}
	o := journalsOf{pid: pid}
	var out []string
	for _, sec := range secrets.Items {
		if _, mine := o.journal(&sec); mine && sec.Type == release.JournalSecretType {
			out = append(out, sec.Labels["name"])
		}
	}
	slices.Sort(out)
	return out
}

// c4Problems checks the cluster once every Release converged: no Helm record pending, no
// journal or lease left, nothing left of a deleted Release, no hook Job left.
func c4Problems(ctx context.Context, env *testenv.Env, names []string, removed map[string]bool) []string {
	var problems []string
	secrets, err := env.Client.CoreV1().Secrets(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		return []string{err.Error()}
	}
	for _, s := range secrets.Items {
		if st := s.Labels["status"]; strings.HasPrefix(st, "pending-") || st == string(release.StatusUninstalling) {
			problems = append(problems, fmt.Sprintf("Helm record %s is %s", s.Name, st))
		}
		if removed[s.Labels["name"]] {
			problems = append(problems, fmt.Sprintf("Helm record %s of a deleted Release is left", s.Name))
		}
	}
	store := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	for _, name := range names {
		if _, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, release.JournalKey(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("journal %s left (%v)", release.JournalKey(name), err))
		}
		if history, err := store.History(ctx, name); err == nil {
			// A kill never makes the controller release again what it released: each revision
			// has other values than the one before.
			for i := 1; i < len(history); i++ {
				prev, cur := history[i-1], history[i]
				if fmt.Sprint(prev.Config) == fmt.Sprint(cur.Config) {
					problems = append(problems, fmt.Sprintf("release %s revision %d (%s) has the values of revision %d: %v",
						name, cur.Version, cur.Info.Description, prev.Version, cur.Config))
				}
			}
		}
		if _, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(ctx, release.LeaseKey(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("lease %s left (%v)", release.LeaseKey(name), err))
		}
		sel := metav1.ListOptions{LabelSelector: instanceLabel + "=" + name}
		jobs, err := env.Client.BatchV1().Jobs(env.Namespace).List(ctx, sel)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, j := range jobs.Items {
			problems = append(problems, fmt.Sprintf("hook Job %s left", j.Name))
		}
		if !removed[name] {
			continue
		}
		cms, err := env.Client.CoreV1().ConfigMaps(env.Namespace).List(ctx, sel)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, cm := range cms.Items {
			problems = append(problems, fmt.Sprintf("ConfigMap %s of deleted Release %s left", cm.Name, name))
		}
		deps, err := env.Client.AppsV1().Deployments(env.Namespace).List(ctx, sel)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, d := range deps.Items {
			problems = append(problems, fmt.Sprintf("Deployment %s of deleted Release %s left", d.Name, name))
		}
	}
	return problems
}
