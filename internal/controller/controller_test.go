package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// smallestReleaseYAML is the smallest Release, as a user writes it.
func smallestReleaseYAML(ns, repoURL, serviceAccount string) string {
	return fmt.Sprintf(`
apiVersion: berth.dev/v1alpha1
kind: Release
metadata: {name: web, namespace: %s}
spec:
  serviceAccountName: %s
  chart:
    repository: %s
    name: web
    version: "0.3.0"
  values: {replicas: 2}
`, ns, serviceAccount, repoURL)
}

// smallestRelease is the smallest Release, to create with a client.
func smallestRelease(t *testing.T, ns, repoURL, serviceAccount string) *v1alpha1.Release {
	t.Helper()
	var rel v1alpha1.Release
	if err := yaml.Unmarshal([]byte(smallestReleaseYAML(ns, repoURL, serviceAccount)), &rel); err != nil {
		t.Fatal(err)
	}
	return &rel
}

func TestReleaseInstallUpgradeSteadyStateUninstall(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	steps := watchSteps(t, env)
	// Exactly as written: applied from YAML, not through the Go types.
	env.Apply(t, smallestReleaseYAML(env.Namespace, releasetest.ServeCharts(t, webChart(t)), "deployer"))

	// Installed: Ready, recorded in Helm's format in the target namespace, objects there.
	got := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	if got.Status.ChartVersion != "0.3.0" || got.Status.ChartName != "web" || !strings.HasPrefix(got.Status.ValuesDigest, "sha256:") {
		t.Errorf("status after install: chart %s %s, values digest %q", got.Status.ChartName, got.Status.ChartVersion, got.Status.ValuesDigest)
	}
	if c := condition(got, controller.ConditionReleased); c == nil || c.Reason != controller.ReasonInstallSucceeded {
		t.Errorf("Released condition after install: %+v", c)
	}
	record := berthtest.LastRecord(t, env, "web")
	if record.Version != 1 || record.Info.Status != release.StatusDeployed {
		t.Errorf("record after install: revision %d %s, want 1 deployed", record.Version, record.Info.Status)
	}
	assertReplicas(t, env, "2")
	seen := steps(1)
	t.Logf("status.currentStep during the install: %q", seen)
	// The operation's start is written; a step only when it runs for a while (reportDelay).
	if len(seen) < 1 || seen[0] != "install" {
		t.Errorf("status.currentStep during the install: %q, want install first", seen)
	}

	// Values changed: upgraded to revision 2.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"values":{"replicas":3}}}`))
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "web", "is upgraded", readyAt(2))
	if c := condition(got, controller.ConditionReleased); c == nil || c.Reason != controller.ReasonUpgradeSucceeded {
		t.Errorf("Released condition after upgrade: %+v", c)
	}
	if len(got.Status.History) != 2 || got.Status.History[0].Operation != "upgrade" || got.Status.History[1].Operation != "install" {
		t.Errorf("history after upgrade: %+v", got.Status.History)
	}
	assertReplicas(t, env, "3")

	// Steady state: a reconcile (asked for by an annotation) writes nothing.
	records := recordNames(t, env)
	before := reconciles(t)
	patch = client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/touched":"1"}}}`))
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatal(err)
	}
	annotated := got.ResourceVersion
	waitUntil(t, "the controller reconciled the annotated Release", func() bool { return reconciles(t) > before })
	var after v1alpha1.Release
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(got), &after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != annotated {
		out, _ := yaml.Marshal(after.Status)
		t.Errorf("a reconcile with nothing to do wrote the Release (resourceVersion %s, then %s); status:\n%s", annotated, after.ResourceVersion, out)
	}
	if got := recordNames(t, env); strings.Join(got, ",") != strings.Join(records, ",") {
		t.Errorf("a reconcile with nothing to do changed the records: %v, then %v", records, got)
	}

	// Deleted: the pre-delete hook ran, the objects are gone, then the Release.
	if err := c.Delete(t.Context(), &after); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the Release is gone", func() bool {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(&after), &v1alpha1.Release{})
		return apierrors.IsNotFound(err)
	})
	job, err := env.Client.BatchV1().Jobs(env.Namespace).Get(t.Context(), "web-drain", metav1.GetOptions{})
	if err != nil {
		t.Errorf("pre-delete hook Job web-drain: %v", err)
	} else if job.Status.Succeeded != 1 {
		t.Errorf("pre-delete hook Job web-drain did not succeed: %+v", job.Status)
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
	berthtest.AssertNoRecords(t, env)
}

func TestReleaseWithoutRightsNamesThePermission(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	if _, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).Create(t.Context(), serviceAccount("nobody"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, webChart(t)), "nobody")
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is stalled", func(rel *v1alpha1.Release) bool {
		s := condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue && rel.Status.ObservedGeneration == rel.Generation
	})
	if s := condition(got, controller.ConditionStalled); s.Reason != controller.ReasonPermissionDenied {
		t.Errorf("Stalled reason %s (%s), want %s", s.Reason, s.Message, controller.ReasonPermissionDenied)
	}
	if r := condition(got, controller.ConditionReady); r == nil || r.Status != metav1.ConditionFalse {
		t.Errorf("Ready condition: %+v", r)
	}
	if len(got.Status.Blockers) == 0 || got.Status.Blockers[0].Kind != "permission" || !strings.Contains(got.Status.Blockers[0].Next, "ServiceAccount") {
		t.Errorf("blockers: %+v, want a permission blocker", got.Status.Blockers)
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
	berthtest.AssertNoRecords(t, env)

	// Nothing was released: deleting the Release has nothing to uninstall.
	if err := c.Delete(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the Release is gone", func() bool {
		return apierrors.IsNotFound(c.Get(t.Context(), client.ObjectKeyFromObject(got), &v1alpha1.Release{}))
	})
}

func TestReleaseDependingOnAnotherNamespaceIsStalled(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	rel := smallestRelease(t, env.Namespace, "https://charts.example.test", "deployer")
	rel.Spec.DependsOn = []v1alpha1.DependencyReference{{Name: "db", Namespace: "elsewhere"}}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is stalled", func(rel *v1alpha1.Release) bool {
		s := condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue
	})
	s := condition(got, controller.ConditionStalled)
	if s.Reason != controller.ReasonInvalidSpec || !strings.Contains(s.Message, "spec.dependsOn[0].namespace") {
		t.Errorf("Stalled condition: %s: %s, want %s naming spec.dependsOn[0].namespace", s.Reason, s.Message, controller.ReasonInvalidSpec)
	}
	if len(got.Finalizers) != 0 {
		t.Errorf("finalizers %v on a Release the controller cannot act on", got.Finalizers)
	}
}

func assertReplicas(t *testing.T, env *testenv.Env, want string) {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "web-config", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap web-config: %v", err)
	}
	if cm.Data["replicas"] != want {
		t.Errorf("ConfigMap web-config replicas = %q, want %q", cm.Data["replicas"], want)
	}
}

// recordNames are the release records of the test's namespace, with their resourceVersions.
func recordNames(t *testing.T, env *testenv.Env) []string {
	t.Helper()
	list, err := env.Client.CoreV1().Secrets(env.Namespace).List(t.Context(), metav1.ListOptions{FieldSelector: "type=helm.sh/release.v1"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Name+"@"+s.ResourceVersion)
	}
	return out
}

// reconciles is how many reconciles the Release controllers of this process completed.
func reconciles(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "controller") == "release" {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func TestReleaseAdoptsARecordedRelease(t *testing.T) {
	env := testenv.New(t)
	chart := webChart(t)
	berthtest.MustBerth(t, env, "install", "web", chart, "--set", "replicas=5")
	c := startController(t, env)
	deployer(t, env, "deployer")
	if err := c.Create(t.Context(), smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, chart), "deployer")); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "has upgraded the release berth installed", readyAt(2))
	if c := condition(got, controller.ConditionReleased); c == nil || c.Reason != controller.ReasonUpgradeSucceeded {
		t.Errorf("Released condition: %+v, want %s", c, controller.ReasonUpgradeSucceeded)
	}
	if record := berthtest.LastRecord(t, env, "web"); record.Version != 2 || record.Info.Status != release.StatusDeployed {
		t.Errorf("record: revision %d %s, want 2 deployed", record.Version, record.Info.Status)
	}
	assertReplicas(t, env, "2")
	deleteRelease(t, c, got)
}

func TestReleaseWithFailingHookNamesTheHook(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	chart := berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {replicas: \"{{ .Values.replicas }}\"}\n",
		"templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: web-migrate
  annotations: {helm.sh/hook: pre-install}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {devcluster.berth.dev/outcome: fail}
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: example.invalid/migrate}]
`,
	})
	if err := c.Create(t.Context(), smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, chart), "deployer")); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is stalled", func(rel *v1alpha1.Release) bool {
		s := condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue
	})
	if s := condition(got, controller.ConditionStalled); s.Reason != controller.ReasonHookFailed {
		t.Errorf("Stalled reason %s (%s), want %s", s.Reason, s.Message, controller.ReasonHookFailed)
	}
	if len(got.Status.Blockers) != 1 || got.Status.Blockers[0].Kind != "hook" || !strings.Contains(got.Status.Blockers[0].Object, "web-migrate") {
		t.Errorf("blockers: %+v, want the hook Job web-migrate", got.Status.Blockers)
	}
	if h := got.Status.History; len(h) != 1 || h[0].Operation != "install" || h[0].Outcome != "Failed" {
		t.Errorf("history: %+v, want one failed install", h)
	}
	if got.Status.CurrentStep != "" {
		t.Errorf("currentStep %q after the operation ended", got.Status.CurrentStep)
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
	waitUntil(t, "a warning event names the hook", func() bool {
		list, err := env.Client.EventsV1().Events(env.Namespace).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Release" && e.Reason == controller.ReasonHookFailed && strings.Contains(e.Note, "web-migrate") {
				return true
			}
		}
		return false
	})
	deleteRelease(t, c, got)
}

// deleteRelease deletes a Release and waits until it is gone.
func deleteRelease(t *testing.T, c client.Client, rel *v1alpha1.Release) {
	t.Helper()
	if err := c.Delete(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the Release is gone", func() bool {
		return apierrors.IsNotFound(c.Get(t.Context(), client.ObjectKeyFromObject(rel), &v1alpha1.Release{}))
	})
}

// watchSteps watches the test namespace's Releases and returns a function that reads the watch
// until the Release reaches status.revision and returns the distinct values of
// status.currentStep seen on the way, in order.
func watchSteps(t *testing.T, env *testenv.Env) func(revision int64) []string {
	t.Helper()
	w, err := env.Resource(t, "berth.dev/v1alpha1", "Release").Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var seen []string
	return func(revision int64) []string {
		timeout := time.After(waitTimeout)
		for {
			select {
			case e := <-w.ResultChan():
				u, ok := e.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				step, _, _ := unstructured.NestedString(u.Object, "status", "currentStep")
				if step != "" && (len(seen) == 0 || seen[len(seen)-1] != step) {
					seen = append(seen, step)
				}
				if rev, _, _ := unstructured.NestedInt64(u.Object, "status", "revision"); rev == revision {
					return seen
				}
			case <-timeout:
				t.Fatalf("the watch did not see revision %d; steps seen: %q", revision, seen)
			}
		}
	}
}

func TestReleaseBlockedUninstallNamesTheFinalizer(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	chart := berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config, finalizers: [example.com/hold]}\ndata: {replicas: \"{{ .Values.replicas }}\"}\n",
	})
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, chart), "deployer")
	rel.Spec.Timeout = &metav1.Duration{Duration: 5 * time.Second}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	if err := c.Delete(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "web", "names what blocks the uninstall", func(rel *v1alpha1.Release) bool {
		return len(rel.Status.Blockers) > 0
	})
	if r := condition(got, controller.ConditionReady); r == nil || r.Reason != controller.ReasonBlocked {
		t.Errorf("Ready condition: %+v, want reason %s", r, controller.ReasonBlocked)
	}
	b := got.Status.Blockers[0]
	if b.Kind != "finalizer" || !strings.Contains(b.Object, "web-config") || !strings.Contains(b.Message+b.Next, "example.com/hold") {
		t.Errorf("blocker %+v, want the finalizer example.com/hold of ConfigMap web-config", b)
	}
	if len(got.Finalizers) == 0 {
		t.Error("the Release was let go while its release is not uninstalled")
	}

	// Once the finalizer is gone, the uninstall (asked for again at once by an annotation)
	// finishes and lets the Release go.
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Patch(t.Context(), "web-config", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	touch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/retry":"1"}}}`))
	if err := c.Patch(t.Context(), got, touch); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the Release is gone", func() bool {
		return apierrors.IsNotFound(c.Get(t.Context(), client.ObjectKeyFromObject(got), &v1alpha1.Release{}))
	})
	berthtest.AssertNoRecords(t, env)
}

func TestReleaseInterruptedInstallIsResumed(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	stop := runController(t, env)
	c := startClient(t, env)
	deployer(t, env, "deployer")
	chart := berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {replicas: \"{{ .Values.replicas }}\"}\n",
		"templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: web-migrate
  annotations: {helm.sh/hook: pre-install}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {devcluster.berth.dev/run: 3s}
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: example.invalid/migrate}]
`,
	})
	if err := c.Create(t.Context(), smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, chart), "deployer")); err != nil {
		t.Fatal(err)
	}
	// Stop the controller while the pre-install hook runs, then start another.
	waitFor(t, c, env.Namespace, "web", "runs its pre-install hook", func(rel *v1alpha1.Release) bool {
		return strings.Contains(rel.Status.CurrentStep, "pre-install")
	})
	stop()

	// The install was interrupted, not finished: its journal, marked interrupted, and its
	// revision, left pending, name an install left unfinished, and the Release still says the
	// attempt is under way.
	records := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	seen, err := lifecycle.Inspect(t.Context(), records, release.NewJournals(env.Client.CoreV1(), env.Namespace), nil, "web")
	if err != nil {
		t.Fatal(err)
	}
	in := seen.Interrupted
	if in == nil || in.Journal == nil {
		t.Fatalf("no interrupted operation with a journal after the controller stopped during the pre-install hook: %+v", seen)
	}
	if in.Journal.State != release.JournalInterrupted {
		t.Errorf("journal state %q, want %q", in.Journal.State, release.JournalInterrupted)
	}
	if status := (lifecycle.State{Last: in.Last, Interrupted: in}).Status(); status != lifecycle.StatusInterruptedInstall {
		t.Errorf("release status %s after the controller stopped, want %s", status, lifecycle.StatusInterruptedInstall)
	}
	var stopped v1alpha1.Release
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: env.Namespace, Name: "web"}, &stopped); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(stopped.Status.Conditions, controller.ConditionReconciling) {
		t.Errorf("the stopped Release is not Reconciling: %+v", stopped.Status.Conditions)
	}

	runController(t, env)
	got := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	if record := berthtest.LastRecord(t, env, "web"); record.Version != 1 || record.Info.Status != release.StatusDeployed {
		t.Errorf("record: revision %d %s, want 1 deployed", record.Version, record.Info.Status)
	}
	assertReplicas(t, env, "2")
	deleteRelease(t, c, got)
}

func TestReleaseSchemaRefusesWhatCannotWork(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	c := startClient(t, env)
	tests := []struct {
		name string
		mod  func(*v1alpha1.Release)
		// want is in the error when the message is the CRD's own.
		want string
	}{
		{"two chart sources", func(r *v1alpha1.Release) {
			r.Spec.Chart.SecretRef = &v1alpha1.KeyReference{Name: "charts", Key: "web.tgz"}
		}, "set exactly one of repository, secretRef and configMapRef"},
		{"no chart source", func(r *v1alpha1.Release) { r.Spec.Chart.Repository = "" }, "set exactly one of repository, secretRef and configMapRef"},
		{"values not a map", func(r *v1alpha1.Release) { r.Spec.Values.Raw = []byte(`[1, 2]`) }, ""},
		{"a release name Helm refuses", func(r *v1alpha1.Release) { r.Spec.ReleaseName = "Web_1" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := smallestRelease(t, env.Namespace, "https://charts.example.test", "deployer")
			tt.mod(rel)
			err := c.Create(t.Context(), rel)
			if !apierrors.IsInvalid(err) || !strings.Contains(fmt.Sprint(err), tt.want) {
				t.Errorf("create: %v, want it refused as invalid (%q)", err, tt.want)
			}
		})
	}
}
