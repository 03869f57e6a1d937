package controller_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// fleetChart is a chart with a ConfigMap of its replicas value, and, when its value broken is
// set, an object the API server refuses.
func fleetChart(t testing.TB) string {
	return berthtest.WriteChart(t, "web", map[string]string{
		"values.yaml": "replicas: 1\nbroken: false\n",
		"templates/app.yaml": `
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {replicas: "{{ .Values.replicas }}"}
{{- if .Values.broken }}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: Not_A_Valid_Name}
{{- end }}
`,
	})
}

// workload is a cluster a Rollout releases into: a devcluster with the test's namespace and
// its deployer account, named to the controller's cluster by a kubeconfig Secret cluster-NAME.
type workload struct {
	*testenv.Env
	cluster *testenv.Cluster
}

func startWorkloads(t testing.TB, env *testenv.Env, names ...string) map[string]workload {
	t.Helper()
	out := map[string]workload{}
	for _, name := range names {
		cl := testenv.NewCluster(t)
		wenv := cl.New(t, env.Namespace)
		releasetest.Deployer(t, wenv, "deployer")
		kubeconfigSecret(t, env, "cluster-"+name, cl.KubeconfigData(t))
		out[name] = workload{Env: wenv, cluster: cl}
	}
	return out
}

// watchOrder watches the Releases of Rollout name and checks, as each appears, that those
// before must be Ready then: before[X] are the Releases that must be Ready when X appears.
type watchOrder struct {
	mu       sync.Mutex
	problems []string
	added    map[string]bool
}

func (o *watchOrder) watch(t *testing.T, env *testenv.Env, before map[string][]string) {
	w, err := env.Resource(t, "berth.dev/v1alpha1", "Release").Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	go func() {
		ready := map[string]bool{}
		for e := range w.ResultChan() {
			u, ok := e.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			var rel v1alpha1.Release
			if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &rel) != nil {
				continue
			}
			if e.Type == watch.Added {
				o.mu.Lock()
				if o.added == nil {
					o.added = map[string]bool{}
				}
				o.added[rel.Name] = true
				o.mu.Unlock()
				for _, b := range before[rel.Name] {
					if !ready[b] {
						o.mu.Lock()
						o.problems = append(o.problems, fmt.Sprintf("Release %s was created before %s was Ready", rel.Name, b))
						o.mu.Unlock()
					}
				}
			}
			ready[rel.Name] = isReady(&rel)
		}
	}()
}

func (o *watchOrder) check(t *testing.T, names ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, name := range names {
		if !o.added[name] {
			t.Errorf("the watch did not see Release %s created", name)
		}
	}
	for _, p := range o.problems {
		t.Error(p)
	}
}

// rolloutCondition waits until the Rollout name has condition typ True for its generation, and
// returns it.
func rolloutCondition(t testing.TB, c client.Client, ns, name, typ string) *v1alpha1.Rollout {
	t.Helper()
	return releasetest.WaitForRollout(t, c, ns, name, "is "+typ, func(ro *v1alpha1.Rollout) bool {
		cond := meta.FindStatusCondition(ro.Status.Conditions, typ)
		return cond != nil && cond.Status == metav1.ConditionTrue && ro.Status.ObservedGeneration == ro.Generation
	})
}

// TestRolloutMovesWaveByWaveAndUndoes releases a chart into three clusters in two waves (one,
// then two, one at a time): each wave starts only once the one before is Ready; then a template
// one cluster of the second wave refuses halts the rollout, which rolls back that wave, then the
// first, each cluster's history saying why, while the cluster not reached stays as it was.
func TestRolloutMovesWaveByWaveAndUndoes(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	clusters := startWorkloads(t, env, "a", "b", "c")
	defaultReadsSecrets(t, env)
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, fleetChart(t))
	ctl := newController(t, env)
	ctl.start()
	var order watchOrder
	order.watch(t, env, map[string][]string{"web-b": {"web-a"}, "web-c": {"web-a", "web-b"}})

	template := releaseOf(t, env.Namespace, "web", repo.URL, "web", "deployer", "{replicas: 2}").Spec
	ro := &v1alpha1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: env.Namespace},
		Spec: v1alpha1.RolloutSpec{
			Template: v1alpha1.ReleaseTemplate{Spec: template},
			Waves: []v1alpha1.Wave{
				{Name: "canary", Clusters: []v1alpha1.WaveCluster{cluster("a")}},
				{Name: "rest", MaxParallel: 1, Clusters: []v1alpha1.WaveCluster{cluster("b"), cluster("c")}},
			},
		},
	}
	if err := c.Create(t.Context(), ro); err != nil {
		t.Fatal(err)
	}
	got := rolloutCondition(t, c, env.Namespace, "web", "Complete")
	order.check(t, "web-a", "web-b", "web-c")
	if got.Status.Summary != "3/3" {
		t.Errorf("summary %q, want 3/3", got.Status.Summary)
	}
	for name, wenv := range clusters {
		if v := configValue(t, wenv.Env); v != "2" {
			t.Errorf("cluster %s: replicas %q, want 2", name, v)
		}
		if rec := berthtest.LastRecord(t, wenv.Env, "web"); rec.Version != 1 {
			t.Errorf("cluster %s: revision %d, want 1", name, rec.Version)
		}
	}

	// A new template that cluster b refuses: a moves, b fails, c is never moved; b, then a,
	// are rolled back to revision 1.
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(ro), ro); err != nil {
		t.Fatal(err)
	}
	ro.Spec.Template.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas": 3}`)}
	ro.Spec.Waves[1].Clusters[0].Values = &apiextensionsv1.JSON{Raw: []byte(`{"broken": true}`)}
	if err := c.Update(t.Context(), ro); err != nil {
		t.Fatal(err)
	}
	got = rolloutCondition(t, c, env.Namespace, "web", "RolledBack")
	f := got.Status.Failure
	if f == nil || f.Wave != "rest" || f.Cluster != "b" || f.Release != "web-b" {
		t.Errorf("status.failure %+v, want cluster b of wave rest", f)
	}
	if halted := meta.FindStatusCondition(got.Status.Conditions, "Halted"); halted == nil || halted.Status != metav1.ConditionTrue || !strings.Contains(halted.Message, "cluster b of wave rest") {
		t.Errorf("Halted %+v, want True naming cluster b of wave rest", halted)
	}
	for _, name := range []string{"a", "b"} {
		rec := berthtest.LastRecord(t, clusters[name].Env, "web")
		if !strings.HasPrefix(rec.Info.Description, "Rollback to 1: Rollout web: cluster b of wave rest") {
			t.Errorf("cluster %s: last revision %d %q, want a rollback to 1 naming cluster b", name, rec.Version, rec.Info.Description)
		}
		if v := configValue(t, clusters[name].Env); v != "2" {
			t.Errorf("cluster %s: replicas %q after the rollback, want 2", name, v)
		}
	}
	if rec := berthtest.LastRecord(t, clusters["c"].Env, "web"); rec.Version != 1 {
		t.Errorf("cluster c was changed: revision %d, want 1", rec.Version)
	}
	// Newest wave first: b's rollback was recorded before a's.
	if a, b := berthtest.LastRecord(t, clusters["a"].Env, "web"), berthtest.LastRecord(t, clusters["b"].Env, "web"); a.Info.LastDeployed.Before(b.Info.LastDeployed) {
		t.Errorf("cluster a rolled back at %s, before cluster b at %s", a.Info.LastDeployed, b.Info.LastDeployed)
	}

	// Fixed, the rollout starts again from the first wave.
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(ro), ro); err != nil {
		t.Fatal(err)
	}
	ro.Spec.Waves[1].Clusters[0].Values = nil
	if err := c.Update(t.Context(), ro); err != nil {
		t.Fatal(err)
	}
	rolloutCondition(t, c, env.Namespace, "web", "Complete")
	for name, wenv := range clusters {
		if v := configValue(t, wenv.Env); v != "3" {
			t.Errorf("cluster %s: replicas %q, want 3", name, v)
		}
	}
	ctl.running()
}

// cluster is the wave cluster NAME, of kubeconfig Secret cluster-NAME.
func cluster(name string) v1alpha1.WaveCluster {
	return v1alpha1.WaveCluster{Name: name, KubeConfig: v1alpha1.KubeConfigReference{SecretRef: v1alpha1.KubeConfigSecretReference{Name: "cluster-" + name}}}
}

// rollout is a Rollout web of the fleet chart of repoURL, {replicas: 2}, acting as deployer in
// each cluster, over waves.
func rollout(t testing.TB, ns, repoURL string, waves ...v1alpha1.Wave) *v1alpha1.Rollout {
	return &v1alpha1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: v1alpha1.RolloutSpec{
			Template: v1alpha1.ReleaseTemplate{Spec: releaseOf(t, ns, "web", repoURL, "web", "deployer", "{replicas: 2}").Spec},
			Waves:    waves,
		},
	}
}

// TestRolloutWaitsForApproval: a wave that asks for approval starts only once berth rollout
// approve approves it, for the Rollout's template; berth rollout status names what it waits for.
// Deleting the Rollout uninstalls the release from every cluster.
func TestRolloutWaitsForApproval(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	clusters := startWorkloads(t, env, "a", "b")
	defaultReadsSecrets(t, env)
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, fleetChart(t))
	ctl := newController(t, env)
	ctl.start()
	ro := rollout(t, env.Namespace, repo.URL,
		v1alpha1.Wave{Name: "canary", Clusters: []v1alpha1.WaveCluster{cluster("a")}},
		v1alpha1.Wave{Name: "prod", Approval: true, Clusters: []v1alpha1.WaveCluster{cluster("b")}})
	if err := c.Create(t.Context(), ro); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitForRollout(t, c, env.Namespace, "web", "waits for the approval of wave prod", func(ro *v1alpha1.Rollout) bool {
		p := meta.FindStatusCondition(ro.Status.Conditions, "Progressing")
		return p != nil && p.Reason == "AwaitingApproval" && strings.Contains(p.Message, "wave prod")
	})
	out, _ := berthtest.MustBerth(t, env, "rollout", "status", "web")
	for _, want := range []string{"AwaitingApproval", "berth rollout approve web", "canary (Done)", "prod (AwaitingApproval)"} {
		if !strings.Contains(out, want) {
			t.Errorf("berth rollout status does not say %q:\n%s", want, out)
		}
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: env.Namespace, Name: "web-b"}, &v1alpha1.Release{}); err == nil {
		t.Error("the Release of wave prod exists before the wave was approved")
	}
	berthtest.AssertNoRecords(t, clusters["b"].Env)

	out, _ = berthtest.MustBerth(t, env, "rollout", "approve", "web")
	if !strings.Contains(out, "wave prod approved") {
		t.Errorf("berth rollout approve: %q", out)
	}
	rolloutCondition(t, c, env.Namespace, "web", "Complete")
	if v := configValue(t, clusters["b"].Env); v != "2" {
		t.Errorf("cluster b: replicas %q, want 2", v)
	}
	if out, _ := berthtest.MustBerth(t, env, "rollout", "list"); !strings.Contains(out, "2/2") || !strings.Contains(out, "Complete") {
		t.Errorf("berth rollout list:\n%s", out)
	}

	// Deleted, the Rollout takes its Releases with it, and each uninstalls its release.
	if err := c.Delete(t.Context(), ro); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		releasetest.WaitGone(t, c, env.Namespace, "web-"+name)
		berthtest.AssertNoRecords(t, clusters[name].Env)
	}
	ctl.running()
}

// TestRolloutHeldByUnreachableCluster: a cluster of the second wave that does not answer holds
// its wave, named, and the third wave never starts; past the Release's timeout the rollout
// halts for it (remediation Halt: the first wave stays as it is).
func TestRolloutHeldByUnreachableCluster(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	clusters := startWorkloads(t, env, "a", "b", "c")
	clusters["b"].cluster.Stop(t)
	defaultReadsSecrets(t, env)
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, fleetChart(t))
	ctl := newController(t, env)
	ctl.start()
	ro := rollout(t, env.Namespace, repo.URL,
		v1alpha1.Wave{Name: "one", Clusters: []v1alpha1.WaveCluster{cluster("a")}},
		v1alpha1.Wave{Name: "two", Clusters: []v1alpha1.WaveCluster{cluster("b")}},
		v1alpha1.Wave{Name: "three", Clusters: []v1alpha1.WaveCluster{cluster("c")}})
	ro.Spec.Remediation = v1alpha1.RemediationHalt
	ro.Spec.Template.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Second}
	if err := c.Create(t.Context(), ro); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(workloadServer(t, clusters["b"].cluster), "https://")
	releasetest.WaitForRollout(t, c, env.Namespace, "web", "holds wave two for cluster b", func(ro *v1alpha1.Rollout) bool {
		return len(ro.Status.Waves) == 3 && len(ro.Status.Waves[1].Clusters) == 1 &&
			ro.Status.Waves[1].Clusters[0].State == "Waiting" && strings.Contains(ro.Status.Waves[1].Clusters[0].Message, host)
	})
	got := rolloutCondition(t, c, env.Namespace, "web", "Halted")
	if f := got.Status.Failure; f == nil || f.Cluster != "b" || f.Reason != "ClusterUnreachable" {
		t.Errorf("status.failure %+v, want cluster b, ClusterUnreachable", f)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: env.Namespace, Name: "web-c"}, &v1alpha1.Release{}); err == nil {
		t.Error("wave three started while wave two was held")
	}
	berthtest.AssertNoRecords(t, clusters["c"].Env)
	if rec := berthtest.LastRecord(t, clusters["a"].Env, "web"); rec.Version != 1 {
		t.Errorf("cluster a: revision %d, want 1 (remediation Halt undoes nothing)", rec.Version)
	}
	ctl.running()
}

// TestRolloutResumesAfterTheControllerIsKilled kills the controller while a wave is under way,
// as a crash or an OOM kill would, and starts another: the rollout ends as it would have, each
// cluster released once, in wave order.
func TestRolloutResumesAfterTheControllerIsKilled(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	clusters := startWorkloads(t, env, "a", "b", "c")
	defaultReadsSecrets(t, env)
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, fleetChart(t))
	var order watchOrder
	order.watch(t, env, map[string][]string{"web-b": {"web-a"}, "web-c": {"web-a", "web-b"}})
	ctl := newController(t, env)
	ctl.start()
	ro := rollout(t, env.Namespace, repo.URL,
		v1alpha1.Wave{Name: "canary", Clusters: []v1alpha1.WaveCluster{cluster("a")}},
		v1alpha1.Wave{Name: "rest", MaxParallel: 1, Clusters: []v1alpha1.WaveCluster{cluster("b"), cluster("c")}})
	if err := c.Create(t.Context(), ro); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, env.Namespace, "web-b", "is created by the second wave", func(*v1alpha1.Release) bool { return true })
	ctl.kill()
	ctl.start()
	got := rolloutCondition(t, c, env.Namespace, "web", "Complete")
	order.check(t, "web-a", "web-b", "web-c")
	if got.Status.Summary != "3/3" {
		t.Errorf("summary %q, want 3/3", got.Status.Summary)
	}
	for name, wl := range clusters {
		if rec := berthtest.LastRecord(t, wl.Env, "web"); rec.Version != 1 {
			t.Errorf("cluster %s: revision %d, want 1: released once", name, rec.Version)
		}
	}
	ctl.running()
}

// TestRolloutUndoesADegradedWave is scenario W2: five clusters in waves of
// one, two and two, each soaked 30s after Ready. A new version whose Pods crash twenty seconds
// after they are Ready in one cluster of the second wave degrades there within its soak: the
// rollout halts, rolls back the second wave, then the first, each cluster's Helm history saying
// why, and the third wave never changes.
func TestRolloutUndoesADegradedWave(t *testing.T) {
	f := startFleetOfFive(t, "panic: out of memory", 30*time.Second)
	env, c, clusters, ctl, ro := f.env, f.c, f.clusters, f.ctl, f.ro

	if err := c.Get(t.Context(), client.ObjectKeyFromObject(ro), ro); err != nil {
		t.Fatal(err)
	}
	ro.Spec.Template.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"version": 2}`)}
	ro.Spec.Waves[1].Clusters[1].Values = &apiextensionsv1.JSON{Raw: []byte(`{"crash": true, "run": "20s"}`)}
	if err := c.Update(t.Context(), ro); err != nil {
		t.Fatal(err)
	}
	got := rolloutCondition(t, c, env.Namespace, "web", "RolledBack")
	if f := got.Status.Failure; f == nil || f.Wave != "two" || f.Cluster != "c" || f.Reason != "Degraded" {
		t.Errorf("status.failure %+v, want cluster c of wave two, Degraded", got.Status.Failure)
	}
	for _, name := range []string{"a", "b", "c"} {
		rec := berthtest.LastRecord(t, clusters[name].Env, "web")
		if want := "Rollback to 1: Rollout web: cluster c of wave two degraded"; rec.Info.Description != want {
			t.Errorf("cluster %s: revision %d %q, want %q", name, rec.Version, rec.Info.Description, want)
		}
	}
	a, b := berthtest.LastRecord(t, clusters["a"].Env, "web"), berthtest.LastRecord(t, clusters["b"].Env, "web")
	if a.Info.LastDeployed.Before(b.Info.LastDeployed) {
		t.Errorf("wave one (cluster a, %s) was rolled back before wave two (cluster b, %s)", a.Info.LastDeployed, b.Info.LastDeployed)
	}
	for _, name := range []string{"d", "e"} {
		if rec := berthtest.LastRecord(t, clusters[name].Env, "web"); rec.Version != 1 {
			t.Errorf("cluster %s of wave three changed: revision %d, want 1", name, rec.Version)
		}
	}
	out := berthtest.MustHelm(t, clusters["a"].Env, "history", "web")
	if !strings.Contains(out, "Rollback to 1: Rollout web") {
		t.Errorf("helm history in cluster a does not show the rollback and its reason:\n%s", out)
	}
	ctl.running()
}

// fleetOfFive is a Rollout of the watched chart over five clusters in waves of one (a), two (b, c)
// and two (d, e), each cluster's upgrades soaked for a watch window, installed and Complete.
type fleetOfFive struct {
	env      *testenv.Env
	c        client.Client
	clusters map[string]workload
	ctl      *controllerProcess
	ro       *v1alpha1.Rollout
}

// startFleetOfFive starts the fleet, its Pods logging log when they crash, each upgrade soaked for soak.
func startFleetOfFive(t testing.TB, log string, soak time.Duration) fleetOfFive {
	env := testenv.New(t)
	f := fleetOfFive{env: env, c: releasetest.Client(t, env), clusters: startWorkloads(t, env, "a", "b", "c", "d", "e")}
	defaultReadsSecrets(t, env)
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, berthtest.WriteChart(t, "watched", berthtest.WatchedChart(log)))
	f.ctl = newController(t, env)
	f.ctl.start()
	f.ro = rollout(t, env.Namespace, repo.URL,
		v1alpha1.Wave{Name: "one", Clusters: []v1alpha1.WaveCluster{cluster("a")}},
		v1alpha1.Wave{Name: "two", Clusters: []v1alpha1.WaveCluster{cluster("b"), cluster("c")}},
		v1alpha1.Wave{Name: "three", Clusters: []v1alpha1.WaveCluster{cluster("d"), cluster("e")}})
	f.ro.Spec.Template.Spec = releaseOf(t, env.Namespace, "web", repo.URL, "watched", "deployer", "{}").Spec
	f.ro.Spec.Template.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Minute}
	f.ro.Spec.Template.Spec.Upgrade = &v1alpha1.UpgradeSpec{WatchSpec: v1alpha1.WatchSpec{WatchFor: &metav1.Duration{Duration: soak}}}
	if err := f.c.Create(t.Context(), f.ro); err != nil {
		t.Fatal(err)
	}
	rolloutCondition(t, f.c, env.Namespace, "web", "Complete")
	return f
}
