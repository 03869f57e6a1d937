package controller_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

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
func fleetChart(t *testing.T) string {
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

// workloads are clusters a Rollout releases into: each a devcluster with the test's namespace
// and its deployer account, named to the controller's cluster by a kubeconfig Secret
// cluster-NAME.
type workloads map[string]*testenv.Env

func startWorkloads(t *testing.T, env *testenv.Env, names ...string) workloads {
	t.Helper()
	out := workloads{}
	for _, name := range names {
		cl := testenv.NewCluster(t)
		wenv := cl.New(t, env.Namespace)
		releasetest.Deployer(t, wenv, "deployer")
		kubeconfigSecret(t, env, "cluster-"+name, cl.KubeconfigData(t))
		out[name] = wenv
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
func rolloutCondition(t *testing.T, c client.Client, ns, name, typ string) *v1alpha1.Rollout {
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
		if v := configValue(t, wenv); v != "2" {
			t.Errorf("cluster %s: replicas %q, want 2", name, v)
		}
		if rec := berthtest.LastRecord(t, wenv, "web"); rec.Version != 1 {
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
		rec := berthtest.LastRecord(t, clusters[name], "web")
		if !strings.HasPrefix(rec.Info.Description, "Rollback to 1: Rollout web: cluster b of wave rest") {
			t.Errorf("cluster %s: last revision %d %q, want a rollback to 1 naming cluster b", name, rec.Version, rec.Info.Description)
		}
		if v := configValue(t, clusters[name]); v != "2" {
			t.Errorf("cluster %s: replicas %q after the rollback, want 2", name, v)
		}
	}
	if rec := berthtest.LastRecord(t, clusters["c"], "web"); rec.Version != 1 {
		t.Errorf("cluster c was changed: revision %d, want 1", rec.Version)
	}
	// Newest wave first: b's rollback was recorded before a's.
	if a, b := berthtest.LastRecord(t, clusters["a"], "web"), berthtest.LastRecord(t, clusters["b"], "web"); a.Info.LastDeployed.Before(b.Info.LastDeployed) {
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
		if v := configValue(t, wenv); v != "3" {
			t.Errorf("cluster %s: replicas %q, want 3", name, v)
		}
	}
	ctl.running()
}

// cluster is the wave cluster NAME, of kubeconfig Secret cluster-NAME.
func cluster(name string) v1alpha1.WaveCluster {
	return v1alpha1.WaveCluster{Name: name, KubeConfig: v1alpha1.KubeConfigReference{SecretRef: v1alpha1.KubeConfigSecretReference{Name: "cluster-" + name}}}
}
