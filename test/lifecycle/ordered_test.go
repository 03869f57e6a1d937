package lifecycle

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

var deployment = berthtest.StartingDeployment

// orderedChart is HIP-0025's example made small: the subchart worker comes after the subchart
// store, the chart's own resources after worker, and among them the groups database, cache and
// app in that order, then web, which has no group. Each first Deployment of a batch starts
// slowly, so that a batch applied before the one before it is ready would show.
var orderedChart = map[string]string{
	"Chart.yaml": `apiVersion: v2
name: shop
version: 1.0.0
annotations:
  helm.sh/depends-on/subcharts: '["worker"]'
dependencies:
- name: store
  version: 1.0.0
- name: worker
  version: 1.0.0
  depends-on: [store]
`,
	"charts/store/Chart.yaml":             "apiVersion: v2\nname: store\nversion: 1.0.0\n",
	"charts/store/templates/store.yaml":   deployment("store", "1500ms"),
	"charts/worker/Chart.yaml":            "apiVersion: v2\nname: worker\nversion: 1.0.0\n",
	"charts/worker/templates/worker.yaml": deployment("worker", "500ms"),
	"templates/db.yaml":                   deployment("db", "1500ms", "helm.sh/resource-group", "database"),
	"templates/cache.yaml": deployment("cache", "500ms", "helm.sh/resource-group", "cache",
		"helm.sh/depends-on/resource-groups", `["database"]`),
	"templates/app.yaml": deployment("app", "500ms", "helm.sh/resource-group", "app",
		"helm.sh/depends-on/resource-groups", `["cache", "database"]`),
	"templates/web.yaml": deployment("web", "0s"),
}

// orderedBatches are the Deployments of orderedChart, batch by batch.
var orderedBatches = [][]string{{"store"}, {"worker"}, {"db"}, {"cache"}, {"app"}, {"web"}}

// deploymentEvents records, in the order one watch delivers them, the events of the
// namespace's Deployments.
type deploymentEvents struct {
	mu     sync.Mutex
	events []deploymentEvent
}

type deploymentEvent struct {
	typ      watch.EventType
	name     string
	ready    bool
	deleting bool
}

func watchDeployments(t *testing.T, env *testenv.Env) *deploymentEvents {
	t.Helper()
	w, err := env.Client.AppsV1().Deployments(env.Namespace).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	out := &deploymentEvents{}
	go func() {
		for ev := range w.ResultChan() {
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok {
				continue
			}
			ready := d.Status.ObservedGeneration >= d.Generation && d.Status.ReadyReplicas == 1 && d.Status.UpdatedReplicas == 1
			out.mu.Lock()
			out.events = append(out.events, deploymentEvent{typ: ev.Type, name: d.Name, ready: ready, deleting: d.DeletionTimestamp != nil})
			out.mu.Unlock()
		}
	}()
	return out
}

// until waits until the events recorded satisfy done.
func (e *deploymentEvents) until(t *testing.T, what string, done func([]deploymentEvent) bool) []deploymentEvent {
	t.Helper()
	var got []deploymentEvent
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		e.mu.Lock()
		got = slices.Clone(e.events)
		e.mu.Unlock()
		return done(got), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; events: %v", what, err, got)
	}
	return got
}

// TestOrderedInstallAndUninstall installs orderedChart with --wait=ordered and proves, by the
// order of one watch's events, that no Deployment of a batch was created before every
// Deployment of the batch before it was ready; then uninstalls it with --wait=ordered and
// proves the reverse: no Deployment of a batch began to be deleted before every Deployment of
// the batch after it was gone. The stored manifest keeps the annotation the API server refuses;
// the objects do not carry it.
func TestOrderedInstallAndUninstall(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "shop", orderedChart)
	events := watchDeployments(t, env)

	_, stderr := berthtest.MustBerth(t, env, "install", "shop", chart, "--wait=ordered")
	for _, step := range []string{"wait-ready/batch-1", "wait-ready/batch-6"} {
		if !strings.Contains(stderr, step) {
			t.Errorf("the install does not show step %s:\n%s", step, stderr)
		}
	}
	got := events.until(t, "every Deployment ready", func(evs []deploymentEvent) bool {
		ready := map[string]bool{}
		for _, ev := range evs {
			ready[ev.name] = ready[ev.name] || ev.ready
		}
		return len(ready) == 6 && !slices.Contains(slices.Collect(maps.Values(ready)), false)
	})
	for i := 1; i < len(orderedBatches); i++ {
		created := firstIndex(got, func(ev deploymentEvent) bool {
			return ev.typ == watch.Added && slices.Contains(orderedBatches[i], ev.name)
		})
		for _, name := range orderedBatches[i-1] {
			ready := firstIndex(got, func(ev deploymentEvent) bool { return ev.name == name && ev.ready })
			if ready < 0 || created < ready {
				t.Errorf("batch %d (%v) was created (event %d) before %s of the batch before was ready (event %d)",
					i+1, orderedBatches[i], created, name, ready)
			}
		}
	}
	d, err := env.Client.AppsV1().Deployments(env.Namespace).Get(t.Context(), "cache", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Annotations["helm.sh/depends-on/resource-groups"]; ok || d.Annotations["helm.sh/resource-group"] != "cache" {
		t.Errorf("annotations of the live cache Deployment: %v, want the group and not the key the API server refuses", d.Annotations)
	}
	manifest, _ := berthtest.MustBerth(t, env, "get", "manifest", "shop")
	if !strings.Contains(manifest, `helm.sh/depends-on/resource-groups: '["database"]'`) {
		t.Errorf("the stored manifest lost the depends-on annotation:\n%s", manifest)
	}

	mark := len(got)
	berthtest.MustBerth(t, env, "uninstall", "shop", "--wait=ordered")
	got = events.until(t, "every Deployment deleted", func(evs []deploymentEvent) bool {
		n := 0
		for _, ev := range evs {
			if ev.typ == watch.Deleted {
				n++
			}
		}
		return n == 6
	})[mark:]
	for i := len(orderedBatches) - 2; i >= 0; i-- {
		deleting := firstIndex(got, func(ev deploymentEvent) bool {
			return slices.Contains(orderedBatches[i], ev.name) && (ev.deleting || ev.typ == watch.Deleted)
		})
		for _, name := range orderedBatches[i+1] {
			gone := firstIndex(got, func(ev deploymentEvent) bool { return ev.name == name && ev.typ == watch.Deleted })
			if gone < 0 || deleting < gone {
				t.Errorf("batch %d (%v) began to be deleted (event %d) before %s of the batch after it was gone (event %d)",
					i+1, orderedBatches[i], deleting, name, gone)
			}
		}
	}
}

// TestOrderErrorsChangeNothing installs charts whose declared order cannot be built: a cycle of
// groups, a group nothing declares, and a subchart that does not exist. Each fails naming what
// is wrong, and nothing is created.
func TestOrderErrorsChangeNothing(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"cycle", map[string]string{
			"templates/a.yaml": deployment("a", "0s", "helm.sh/resource-group", "a", "helm.sh/depends-on/resource-groups", `["b"]`),
			"templates/b.yaml": deployment("b", "0s", "helm.sh/resource-group", "b", "helm.sh/depends-on/resource-groups", `["a"]`),
		}, []string{"cycle", `"a" -> "b" -> "a"`}},
		{"unknown group", map[string]string{
			"templates/a.yaml": deployment("a", "0s", "helm.sh/resource-group", "a", "helm.sh/depends-on/resource-groups", `["nowhere"]`),
		}, []string{`group "a" depends on group "nowhere"`}},
		{"unknown subchart", map[string]string{
			"Chart.yaml":       "apiVersion: v2\nname: bad\nversion: 1.0.0\nannotations:\n  helm.sh/depends-on/subcharts: '[\"store\"]'\n",
			"templates/a.yaml": deployment("a", "0s"),
		}, []string{`"store" is not a subchart`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t)
			chart := berthtest.WriteChart(t, "bad", tt.files)
			_, stderr, err := berthtest.Berth(t, env, "install", "bad", chart, "--wait=ordered")
			if err == nil {
				t.Fatalf("install succeeded, want the order refused")
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("the error does not say %q:\n%s", w, stderr)
				}
			}
			berthtest.AssertNoRecords(t, env)
			list, err := env.Client.AppsV1().Deployments(env.Namespace).List(t.Context(), metav1.ListOptions{})
			if err != nil || len(list.Items) > 0 {
				t.Errorf("Deployments after the refused install: %d (%v), want none", len(list.Items), err)
			}
		})
	}
}

// TestOrderedChartTemplateEqualsHelm renders orderedChart with berth and helm: the annotations
// change nothing in what is rendered.
func TestOrderedChartTemplateEqualsHelm(t *testing.T) {
	t.Parallel()
	chart := berthtest.WriteChart(t, "shop", orderedChart)
	args := []string{"template", "shop", chart, "-n", "shop"}
	want, stderr, err := berthtest.RunHelm(t, args...)
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, stderr)
	}
	got, stderr, err := berthtest.RunBerth(t, args...)
	if err != nil {
		t.Fatalf("berth %v: %v\n%s", args, err, stderr)
	}
	if got != want {
		t.Errorf("berth template differs from helm template:\nberth:\n%s\nhelm:\n%s", got, want)
	}
}

func firstIndex(evs []deploymentEvent, match func(deploymentEvent) bool) int {
	return slices.IndexFunc(evs, match)
}
