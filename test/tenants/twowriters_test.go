package tenants_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestTwoControllersAndACommandOneRevisionPerChange (scenario T3): two controllers, leader
// election off, reconcile the same three Releases while a person runs berth upgrade on one of
// them. Every change (install, a change of values, a change of chart version, the command's
// upgrade) makes exactly one revision: no revision is left pending or failed by a lost race,
// exactly one is deployed, revisions are contiguous, and no lease or journal is left behind.
func TestTwoControllersAndACommandOneRevisionPerChange(t *testing.T) {
	env := testenv.New(t)
	ctx, ns := t.Context(), env.Namespace
	c := releasetest.Client(t, env)
	releasetest.Deployer(t, env, "deployer")
	v1, v2 := twoWritersChart(t, "0.1.0"), twoWritersChart(t, "0.2.0")
	repoURL := releasetest.ServeCharts(t, v1, v2)
	note, takeovers := traceWrites(t, env)
	stopA := runNamespacedController(t, env, "controller-a")
	stopB := runNamespacedController(t, env, "controller-b")

	// The states a release can be recorded in: a chart version and the values given.
	installed := recordedState{"0.1.0", `{"message":"one"}`}
	newValues := recordedState{"0.1.0", `{"message":"two"}`}
	newChart := recordedState{"0.2.0", `{"message":"two"}`}
	byCommand := recordedState{"0.2.0", `{"message":"cli"}`}
	specs := []recordedState{installed, newValues, newChart} // by generation

	names := []string{"alpha", "bravo", "charlie"}
	for _, name := range names {
		if err := c.Create(ctx, twoWritersRelease(t, ns, name, repoURL)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		releasetest.WaitFor(t, c, ns, name, "is installed", readyAtGeneration(1))
	}

	note("test: all installed; changing values")
	for _, name := range names {
		patchSpec(t, c, ns, name, `{"spec":{"values":{"message":"two"}}}`)
	}
	for _, name := range names {
		releasetest.WaitFor(t, c, ns, name, "is upgraded to its new values", readyAtGeneration(2))
	}

	// The chart version changes while someone upgrades alpha from the command line with other
	// values, waiting for the lease of whoever holds it.
	note("test: all upgraded to new values; changing chart version, and berth upgrade alpha")
	cli := make(chan error, 1)
	var cliErr berthtest.LockedBuffer
	go func() {
		_, err := berthtest.BerthStreaming(t, env, &cliErr, "upgrade", "alpha", v2, "--set", "message=cli",
			"--wait", "--wait-for-lock", "--timeout", "3m")
		cli <- err
	}()
	for _, name := range names {
		patchSpec(t, c, ns, name, `{"spec":{"chart":{"version":"0.2.0"}}}`)
	}
	select {
	case err := <-cli:
		if err != nil {
			t.Fatalf("berth upgrade alpha: %v\nstderr:\n%s", err, cliErr.String())
		}
	case <-time.After(releasetest.WaitTimeout): // a bound, not a wait: the command returns long before
		t.Fatalf("berth upgrade alpha did not return within %s\nstderr:\n%s", releasetest.WaitTimeout, cliErr.String())
	}
	note("test: berth upgrade alpha returned")
	records := release.NewSecretStore(env.Client.CoreV1(), ns)
	for _, name := range names {
		releasetest.WaitFor(t, c, ns, name, "is upgraded to its new chart, and its record says so", func(rel *v1alpha1.Release) bool {
			if !readyAtGeneration(3)(rel) {
				return false
			}
			last, err := records.Last(ctx, name)
			return err == nil && last.Info.Status == release.StatusDeployed && last.Version == rel.Status.Revision &&
				stateOf(t, last) == newChart
		})
	}

	// Every Release has converged and nothing is left to change: the controllers stop (a
	// controller stops an operation at a step its journal records), and what they wrote until
	// then is all there is. A revision or journal written after this point is a writer that acted
	// on an old view of a release that was already as its spec asks.
	note("test: every Release converged; stopping the controllers")
	stopA()
	stopB()

	// Expected histories. alpha's has the command's revision and its own: if the command ran
	// after a controller upgraded alpha to the new chart, a controller then upgraded it back to
	// its Release's spec (the command changed the release behind the controllers' back: bringing
	// it back is one more change, made once). What must never be is two revisions of one change
	// (the same chart and values recorded twice in a row), or a pending or failed revision.
	want := map[string][][]recordedState{
		"alpha": {
			{installed, newValues, newChart, byCommand, newChart}, // command after the controllers; then put back
			{installed, newValues, byCommand, newChart},           // command first; the controllers upgraded after it
		},
		"bravo":   {{installed, newValues, newChart}},
		"charlie": {{installed, newValues, newChart}},
	}
	for _, name := range names {
		history, err := records.History(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		var got []recordedState
		deployed, latest := 0, 0 // latest: the newest generation released so far, as an index of specs
		for i, r := range history {
			got = append(got, stateOf(t, r))
			t.Logf("release %s revision %d: %s, chart %s, values %s, %q", name, r.Version, r.Info.Status,
				got[i].chartVersion, got[i].values, r.Info.Description)
			if r.Version != i+1 {
				t.Errorf("release %s: revision %d is the %d-th recorded: revisions are not contiguous", name, r.Version, i+1)
			}
			switch r.Info.Status {
			case release.StatusDeployed:
				deployed++
			case release.StatusSuperseded:
			default:
				t.Errorf("release %s revision %d is %s, want superseded or deployed (the last)", name, r.Version, r.Info.Status)
			}
			if i > 0 && got[i] == got[i-1] {
				t.Errorf("release %s revisions %d and %d are the same change (chart %s, values %s): two revisions for one change",
					name, r.Version-1, r.Version, got[i].chartVersion, got[i].values)
			}
			if at := slices.Index(specs, got[i]); at >= 0 && at < latest {
				t.Errorf("release %s revision %d goes back to the spec of generation %d (chart %s, values %s) after generation %d's was released: a writer acted on an old spec",
					name, r.Version, at+1, got[i].chartVersion, got[i].values, latest+1)
			} else if at > latest {
				latest = at
			}
		}
		if deployed != 1 || history[len(history)-1].Info.Status != release.StatusDeployed {
			t.Errorf("release %s: %d revisions deployed, want exactly one, the last", name, deployed)
		}
		if !slices.ContainsFunc(want[name], func(w []recordedState) bool { return slices.Equal(w, got) }) {
			t.Errorf("release %s: %d revisions %v, want one per change: one of %v", name, len(got), got, want[name])
		}
	}

	// Every writer here is live and renews its lease: none may lose it to another.
	for _, taken := range takeovers() {
		t.Errorf("a live lease was taken over: %s", taken)
	}

	journals, err := env.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{FieldSelector: "type=" + release.JournalSecretType})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range journals.Items {
		t.Errorf("journal Secret %s left behind: an operation was under way after every Release had converged", s.Name)
	}
	leases, err := env.Client.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if strings.HasPrefix(l.Name, release.LeaseKey("")) {
			holder := ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			t.Errorf("Lease %s left behind, held by %q (%s)", l.Name, holder, l.Annotations[release.LeaseWhoAnnotation])
		}
	}
}

// recordedState is what a revision records of a change: its chart version and the values given.
type recordedState struct{ chartVersion, values string }

func (s recordedState) String() string { return s.chartVersion + " " + s.values }

// stateOf is the chart version and the values that revision r records.
func stateOf(t *testing.T, r *release.Release) recordedState {
	t.Helper()
	values, err := json.Marshal(r.Config)
	if err != nil {
		t.Fatal(err)
	}
	version := ""
	if r.Chart != nil && r.Chart.Metadata != nil {
		version = r.Chart.Metadata.Version
	}
	return recordedState{version, string(values)}
}

// twoWritersChart is the chart web at version: a ConfigMap with the message of its values and
// a Deployment whose Pods roll when the message or the version changes.
func twoWritersChart(t *testing.T, version string) string {
	return berthtest.PackageNewChart(t, "web", version, map[string]string{
		"values.yaml": "message: hello\n",
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-config}
data: {message: {{ .Values.message | quote }}, version: {{ .Chart.Version | quote }}}
`,
		"templates/app.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-app}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
      annotations: {message: {{ .Values.message | quote }}, version: {{ .Chart.Version | quote }}}
    spec: {containers: [{name: app, image: example.invalid/app}]}
`,
	})
}

// twoWritersRelease is the Release name of chart web 0.1.0 of repoURL with message one, acting as
// the deployer account and checked every 10s: a controller soon notices a release changed
// behind its back.
func twoWritersRelease(t *testing.T, ns, name, repoURL string) *v1alpha1.Release {
	t.Helper()
	rel := releaseOf(t, ns, name, repoURL, "deployer", "2m")
	rel.Spec.Chart.Version = "0.1.0"
	rel.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"message":"one"}`)}
	rel.Spec.Interval = &metav1.Duration{Duration: 10 * time.Second}
	return rel
}

// patchSpec merges patch (JSON) into the Release name.
func patchSpec(t *testing.T, c client.Client, ns, name, patch string) {
	t.Helper()
	rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Patch(t.Context(), rel, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("patch Release %s/%s with %s: %v", ns, name, patch, err)
	}
}

// readyAtGeneration is true of a Release at generation gen that is Ready for it.
func readyAtGeneration(gen int64) func(*v1alpha1.Release) bool {
	return func(rel *v1alpha1.Release) bool {
		cond := releasetest.Condition(rel, controller.ConditionReady)
		return rel.Generation == gen && cond != nil && cond.Status == metav1.ConditionTrue &&
			cond.ObservedGeneration == gen && rel.Status.ObservedGeneration == gen
	}
}

// runNamespacedController runs a controller named identity, without leader election, for the
// Releases of the test's namespace only, until the test ends or stop is called; stop returns
// once the controller has stopped. Its logs say which it is.
func runNamespacedController(t *testing.T, env *testenv.Env, identity string) (stop func()) {
	t.Helper()
	logs := slog.NewTextHandler(t.Output(), nil).WithAttrs([]slog.Attr{slog.String("replica", identity)})
	return releasetest.RunController(t, env, controller.Options{
		Concurrency: 2, MetricsBindAddress: "0", HealthProbeBindAddress: "0", CacheDir: t.TempDir(),
		Namespace: env.Namespace, Identity: identity, LeaderElection: false,
		Logger: logr.FromSlogHandler(logs),
	})
}

// traceWrites records, until the test ends, who takes and gives back the release leases of the
// test's namespace and which release records and journals are written, and logs it all when the
// test failed, with every change of the Releases' status: which writer wrote what, having seen
// what. The test notes its own steps in it with note; takeovers lists the leases that passed from
// one holder to another without being given back first (every holder here is live).
func traceWrites(t *testing.T, env *testenv.Env) (note func(format string, args ...any), takeovers func() []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	var mu sync.Mutex
	var lines, taken []string
	note = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf("%8.3fs ", time.Since(start).Seconds())+fmt.Sprintf(format, args...))
	}
	leases, err := env.Client.CoordinationV1().Leases(env.Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := env.Client.CoreV1().Secrets(env.Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := controller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	releases, err := wc.Watch(ctx, &v1alpha1.ReleaseList{}, client.InNamespace(env.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev := range releases.ResultChan() {
			rel, ok := ev.Object.(*v1alpha1.Release)
			if !ok {
				continue
			}
			st, ready, reconciling := rel.Status, "none", ""
			if c := releasetest.Condition(rel, controller.ConditionReady); c != nil {
				ready = fmt.Sprintf("%s %s gen %d", c.Status, c.Reason, c.ObservedGeneration)
			}
			if releasetest.Condition(rel, controller.ConditionReconciling) != nil {
				reconciling = ", Reconciling"
			}
			note("Release %s %s: generation %d; status: revision %d, observed %d, attempted %d; Ready %s%s",
				rel.Name, ev.Type, rel.Generation, st.Revision, st.ObservedGeneration, st.LastAttemptedGeneration, ready, reconciling)
		}
	})
	wg.Go(func() {
		holders := map[string]string{}
		for ev := range leases.ResultChan() {
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok || !strings.HasPrefix(l.Name, release.LeaseKey("")) {
				continue
			}
			id := ""
			if l.Spec.HolderIdentity != nil {
				id = *l.Spec.HolderIdentity
			}
			holder := fmt.Sprintf("%s (%s, %s)", l.Annotations[release.LeaseWhoAnnotation], l.Annotations[release.LeaseCommandAnnotation], id)
			if ev.Type == watch.Modified && holders[l.Name] == holder {
				continue // a renewal
			}
			if ev.Type == watch.Modified {
				mu.Lock()
				taken = append(taken, fmt.Sprintf("Lease %s taken from %s by %s", l.Name, holders[l.Name], holder))
				mu.Unlock()
			}
			holders[l.Name] = holder
			note("Lease %s %s: %s", l.Name, ev.Type, holder)
		}
	})
	wg.Go(func() {
		for ev := range secrets.ResultChan() {
			s, ok := ev.Object.(*corev1.Secret)
			if !ok {
				continue
			}
			switch s.Type {
			case "helm.sh/release.v1":
				note("record %s %s: status %s", s.Name, ev.Type, s.Labels["status"])
			case release.JournalSecretType:
				note("journal %s %s", s.Name, ev.Type)
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		leases.Stop()
		secrets.Stop()
		releases.Stop()
		wg.Wait()
		if t.Failed() {
			t.Logf("writes:\n%s", strings.Join(lines, "\n"))
		}
	})
	takeovers = func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(taken)
	}
	return note, takeovers
}
