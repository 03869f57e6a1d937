package controller_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestControllerOrdersDeclaredBatches releases, through the controller, a chart that declares an
// order (its own resources after the subchart store; the group app after the group database),
// and proves by the order of one watch's events that no batch was created before the one
// before it was ready. The Release asks for nothing: a chart that declares an order is applied
// in it.
func TestControllerOrdersDeclaredBatches(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	chart := berthtest.WriteChart(t, "shop", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: shop\nversion: 0.1.0\nannotations:\n  helm.sh/depends-on/subcharts: '[\"store\"]'\n" +
			"dependencies:\n- name: store\n  version: 0.1.0\n",
		"charts/store/Chart.yaml":           "apiVersion: v2\nname: store\nversion: 0.1.0\n",
		"charts/store/templates/store.yaml": berthtest.StartingDeployment("store", "1500ms"),
		"templates/db.yaml":                 berthtest.StartingDeployment("db", "1500ms", "helm.sh/resource-group", "database"),
		"templates/app.yaml":                berthtest.StartingDeployment("app", "0s", "helm.sh/resource-group", "app", "helm.sh/depends-on/resource-groups", `["database"]`),
	})
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, chart)
	w, err := env.Client.AppsV1().Deployments(env.Namespace).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	type event struct {
		name  string
		added bool
		ready bool
	}
	var events []event
	go func() {
		for ev := range w.ResultChan() {
			if d, ok := ev.Object.(*appsv1.Deployment); ok {
				mu.Lock()
				events = append(events, event{name: d.Name, added: ev.Type == watch.Added,
					ready: d.Status.ObservedGeneration >= d.Generation && d.Status.ReadyReplicas == 1})
				mu.Unlock()
			}
		}
	}()

	releasetest.Deployer(t, env, "deployer")
	ctl := newController(t, env)
	ctl.start()
	if err := c.Create(t.Context(), releaseOf(t, env.Namespace, "shop", repo.URL, "shop", "deployer", "{}")); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, env.Namespace, "shop", "is installed", readyAt(1))

	var got []event
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		mu.Lock()
		got = slices.Clone(events)
		mu.Unlock()
		return slices.ContainsFunc(got, func(e event) bool { return e.name == "app" && e.ready }), nil
	})
	if err != nil {
		t.Fatalf("waiting for app to be ready: %v", err)
	}
	batches := [][]string{{"store"}, {"db"}, {"app"}}
	for i := 1; i < len(batches); i++ {
		created := slices.IndexFunc(got, func(e event) bool { return e.added && slices.Contains(batches[i], e.name) })
		for _, name := range batches[i-1] {
			ready := slices.IndexFunc(got, func(e event) bool { return e.name == name && e.ready })
			if ready < 0 || created < ready {
				t.Errorf("%v was created (event %d) before %s was ready (event %d): %+v", batches[i], created, name, ready, got)
			}
		}
	}
	ctl.running()
}
