package controller_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// slowChart is a chart whose install ends with a post-install hook Job that runs three seconds,
// and whose uninstall starts with a pre-delete hook Job that runs three seconds; both Jobs stay.
// Its objects are named after the release: RELEASE-config, RELEASE-post-install, ...
func slowChart(t *testing.T, name string) string {
	hook := func(event string) string {
		return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: "{{ .Release.Name }}-%[1]s"
  annotations: {helm.sh/hook: %[1]s}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {devcluster.berth.dev/run: 3s}
    spec:
      restartPolicy: Never
      containers: [{name: hook, image: example.invalid/hook}]
`, event)
	}
	return berthtest.PackageNewChart(t, name, "0.1.0", map[string]string{
		"templates/config.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"{{ .Release.Name }}-config\"}\n",
		"templates/post-install.yaml": hook("post-install"),
		"templates/pre-delete.yaml":   hook("pre-delete"),
	})
}

// releaseOf is a Release name of chart from the repository at url, depending on deps.
func releaseOf(ns, url, chart, name string, deps ...string) *v1alpha1.Release {
	rel := &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.ReleaseSpec{
			ServiceAccountName: "deployer",
			Chart:              v1alpha1.ChartSource{Repository: url, Name: chart, Version: "0.1.0"},
		},
	}
	for _, d := range deps {
		rel.Spec.DependsOn = append(rel.Spec.DependsOn, v1alpha1.DependencyReference{Name: d})
	}
	return rel
}

func TestReleaseDependsOnOrdersInstallAndUninstall(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	// Two at once: app is reconciled while db's operations run (of three workers, one namespace
	// has two).
	runController(t, env, 3)
	c := startClient(t, env)
	deployer(t, env, "deployer")
	url := releasetest.ServeCharts(t, slowChart(t, "db"), slowChart(t, "app"))
	ns := env.Namespace

	// Created at once, the dependent first.
	for _, rel := range []*v1alpha1.Release{releaseOf(ns, url, "app", "app", "db"), releaseOf(ns, url, "db", "db")} {
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	waiting := waitFor(t, c, ns, "app", "waits for db", func(rel *v1alpha1.Release) bool {
		r := condition(rel, controller.ConditionReady)
		return r != nil && r.Reason == controller.ReasonDependencyNotReady
	})
	if r := condition(waiting, controller.ConditionReady); r.Status != metav1.ConditionFalse || !strings.Contains(r.Message, "db (") {
		t.Errorf("Ready condition while waiting: %+v, want False naming db", r)
	}
	if r := condition(waiting, controller.ConditionReconciling); r == nil || r.Status != metav1.ConditionTrue {
		t.Errorf("Reconciling condition while waiting: %+v, want True", r)
	}
	db := waitFor(t, c, ns, "db", "is installed", readyAt(1))
	app := waitFor(t, c, ns, "app", "is installed", readyAt(1))

	// app's install started after db's last step (its post-install hook) had finished.
	dbDone := berthtest.RecordedHook(t, berthtest.LastRecord(t, env, "db"), "db-post-install").LastRun.CompletedAt
	appStart := berthtest.LastRecord(t, env, "app").Info.FirstDeployed
	if !appStart.After(dbDone) {
		t.Errorf("app's install started at %s, before db's install finished at %s", appStart, dbDone)
	}

	// Deleted at once, the dependency first: db waits for app to be gone. The order is read from
	// one watch of the namespace's Secrets (Helm's records and berth's journals), which delivers
	// their changes in the order the API server made them.
	records := watchSecrets(t, env)
	for _, rel := range []*v1alpha1.Release{db, app} {
		if err := c.Delete(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	held := waitFor(t, c, ns, "db", "waits for app", func(rel *v1alpha1.Release) bool {
		r := condition(rel, controller.ConditionReady)
		return r != nil && r.Reason == controller.ReasonDependentsExist
	})
	if b := held.Status.Blockers; len(b) != 1 || b[0].Kind != "dependents" || b[0].Object != "Release/"+ns+"/app" {
		t.Errorf("blockers of db while app exists: %+v, want Release app", b)
	}
	waitUntil(t, "both Releases are gone", func() bool {
		return apierrors.IsNotFound(c.Get(t.Context(), client.ObjectKeyFromObject(db), &v1alpha1.Release{})) &&
			apierrors.IsNotFound(c.Get(t.Context(), client.ObjectKeyFromObject(app), &v1alpha1.Release{}))
	})
	berthtest.AssertNoRecords(t, env)
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "app-config", "db-config")
	// app's uninstall ended (its records deleted, after its hooks ran and its objects were gone,
	// then its journal) before db's began (its journal written, before its pre-delete hook is
	// created).
	ended := func(events []secretEvent, name string) int {
		return min(lastOf(events, "helm", name, watch.Deleted), lastOf(events, "berth", name, watch.Deleted))
	}
	events := waitForSecretEvents(t, records, func(events []secretEvent) bool {
		return ended(events, "app") >= 0 && ended(events, "db") >= 0
	})
	appDone := max(lastOf(events, "helm", "app", watch.Deleted), lastOf(events, "berth", "app", watch.Deleted))
	dbStart := firstOf(events, "berth", "db", watch.Added)
	switch {
	case dbStart < 0:
		t.Errorf("no journal of db's uninstall was seen:\n%s", describeEvents(events))
	case dbStart < appDone:
		t.Errorf("db's uninstall began (event %d) before app's uninstall ended (event %d):\n%s",
			dbStart, appDone, describeEvents(events))
	}
	for i, e := range events[:max(dbStart, 0)] {
		if e.name == "db" && e.owner == "helm" {
			t.Errorf("db's record changed (event %d, %s) before its uninstall began:\n%s", i, e.typ, describeEvents(events))
			break
		}
	}
}

// secretEvent is a change of a Secret that holds a Helm record (owner helm) or a journal (owner
// berth) of the release name.
type secretEvent struct {
	typ         watch.EventType
	owner, name string
	secret      string
}

// secretEvents collects the events of one watch of the test namespace's Secrets.
type secretEvents struct {
	mu     sync.Mutex
	events []secretEvent
	ended  bool
}

func (s *secretEvents) snapshot() ([]secretEvent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events), s.ended
}

// watchSecrets watches the namespace's Secrets from now on until the test ends.
func watchSecrets(t *testing.T, env *testenv.Env) *secretEvents {
	t.Helper()
	secrets := env.Client.CoreV1().Secrets(env.Namespace)
	list, err := secrets.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := secrets.Watch(t.Context(), metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	s := &secretEvents{}
	go func() {
		defer func() {
			s.mu.Lock()
			s.ended = true
			s.mu.Unlock()
		}()
		for e := range w.ResultChan() {
			sec, ok := e.Object.(*corev1.Secret)
			if !ok {
				continue
			}
			s.mu.Lock()
			s.events = append(s.events, secretEvent{typ: e.Type, owner: sec.Labels["owner"], name: sec.Labels["name"], secret: sec.Name})
			s.mu.Unlock()
		}
	}()
	return s
}

// waitForSecretEvents waits until the events seen so far satisfy done, and returns them. It fails
// the test when the watch ends first.
func waitForSecretEvents(t *testing.T, s *secretEvents, done func([]secretEvent) bool) []secretEvent {
	t.Helper()
	var events []secretEvent
	waitUntil(t, "the watch saw the records deleted", func() bool {
		var ended bool
		events, ended = s.snapshot()
		if !done(events) && ended {
			t.Fatalf("the watch of Secrets ended early:\n%s", describeEvents(events))
		}
		return done(events)
	})
	return events
}

// firstOf and lastOf are the index of the first and the last event of type typ of a Secret of
// owner for release name; -1 when there is none.
func firstOf(events []secretEvent, owner, name string, typ watch.EventType) int {
	return slices.IndexFunc(events, func(e secretEvent) bool { return e.owner == owner && e.name == name && e.typ == typ })
}

func lastOf(events []secretEvent, owner, name string, typ watch.EventType) int {
	for i := len(events) - 1; i >= 0; i-- {
		if e := events[i]; e.owner == owner && e.name == name && e.typ == typ {
			return i
		}
	}
	return -1
}

func describeEvents(events []secretEvent) string {
	var b strings.Builder
	for i, e := range events {
		fmt.Fprintf(&b, "  %d %s %s\n", i, e.typ, e.secret)
	}
	return b.String()
}

func TestReleaseDependencyCycleIsStalled(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	url := releasetest.ServeCharts(t, slowChart(t, "db"))
	ns := env.Namespace
	for _, rel := range []*v1alpha1.Release{
		releaseOf(ns, url, "db", "a", "b"), releaseOf(ns, url, "db", "b", "a"), releaseOf(ns, url, "db", "self", "self"),
		releaseOf(ns, url, "db", "lonely", "ghost"),
	} {
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	lonely := waitFor(t, c, ns, "lonely", "waits for ghost", func(rel *v1alpha1.Release) bool {
		r := condition(rel, controller.ConditionReady)
		return r != nil && r.Reason == controller.ReasonDependencyNotReady
	})
	if r := condition(lonely, controller.ConditionReady); !strings.Contains(r.Message, "ghost (does not exist)") {
		t.Errorf("Ready condition of a Release depending on a missing one: %s, want it to say ghost does not exist", r.Message)
	}
	stalled := func(rel *v1alpha1.Release) bool {
		s := condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue && rel.Status.ObservedGeneration == rel.Generation
	}
	for name, cycle := range map[string]string{"a": "a -> b -> a", "b": "b -> a -> b", "self": "self -> self"} {
		got := waitFor(t, c, ns, name, "is stalled", stalled)
		if s := condition(got, controller.ConditionStalled); s.Reason != controller.ReasonDependencyCycle || !strings.Contains(s.Message, cycle) {
			t.Errorf("Stalled condition of %s: %s: %s, want %s naming %s", name, s.Reason, s.Message, controller.ReasonDependencyCycle, cycle)
		}
		if r := condition(got, controller.ConditionReady); r == nil || r.Status != metav1.ConditionFalse {
			t.Errorf("Ready condition of %s: %+v", name, r)
		}
	}
	berthtest.AssertNoRecords(t, env)

	// Not looped: a reconcile of a stalled Release (asked for by an annotation) writes nothing.
	var a v1alpha1.Release
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "a"}, &a); err != nil {
		t.Fatal(err)
	}
	before := reconciles(t)
	touch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/touched":"1"}}}`))
	if err := c.Patch(t.Context(), &a, touch); err != nil {
		t.Fatal(err)
	}
	annotated := a.ResourceVersion
	waitUntil(t, "the controller reconciled the annotated Release", func() bool { return reconciles(t) > before })
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(&a), &a); err != nil {
		t.Fatal(err)
	}
	if a.ResourceVersion != annotated {
		t.Errorf("a reconcile of a Release stalled in a cycle wrote it (resourceVersion %s, then %s)", annotated, a.ResourceVersion)
	}

	// Breaking the cycle at b lets b, then a, be installed.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"dependsOn":null}}`))
	if err := c.Patch(t.Context(), &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}}, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, ns, "b", "is installed", readyAt(1))
	waitFor(t, c, ns, "a", "is installed", readyAt(1))
}
