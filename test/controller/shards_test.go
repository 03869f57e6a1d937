package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestShardControllersServeOnlyTheirShard runs two shard controllers of one namespace, with
// leader election, as the chart runs its shards. Each reconciles only the Releases of its shard and caches no other, and
// watches the ConfigMaps its Releases take values from; a Release
// of shard one that depends on one of shard two waits for it and goes on once it is Ready, and
// shard two's Release, deleted, waits for its dependent of shard one. A Release of a shard no
// controller runs for, and one of no shard, are left alone, and berth doctor names them; before
// any controller runs, it says that instead. Each shard has a leader election Lease of its own,
// which says what it serves.
func TestShardControllersServeOnlyTheirShard(t *testing.T) {
	env := testenv.New(t)
	ctx, ns := t.Context(), env.Namespace
	c := releasetest.Client(t, env)
	releasetest.Deployer(t, env, "deployer")
	repoURL := releasetest.ServeCharts(t, berthtest.PackageNewChart(t, "shard", "0.1.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {a: b}\n",
	}))
	// The CRD may be Established a moment before discovery serves it.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, releasetest.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		return c.List(ctx, &v1alpha1.ReleaseList{}, client.InNamespace(ns)) == nil, nil
	})
	if err != nil {
		t.Fatalf("wait until Releases are served: %v", err)
	}
	create := func(name, shard string, dependsOn ...string) {
		t.Helper()
		rel := releaseOf(t, ns, name, repoURL, "shard", "deployer", "{}")
		if shard != "" {
			rel.Labels = map[string]string{v1alpha1.ShardKeyLabel: shard}
		}
		if name == "db" {
			rel.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "db-values"}}
		}
		for _, d := range dependsOn {
			rel.Spec.DependsOn = append(rel.Spec.DependsOn, v1alpha1.DependencyReference{Name: d})
		}
		if err := c.Create(ctx, rel); err != nil {
			t.Fatal(err)
		}
	}
	create("app", "one", "db") // shard one, depends on shard two's db
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "db-values"}, Data: map[string]string{"values.yaml": "size: 1\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create("db", "two")     // takes values from ConfigMap db-values
	create("lost", "three") // no controller runs for shard three
	create("plain", "")     // of no shard, while only shards run

	// No controller runs: one finding, not one per Release.
	rep := doctorOf(t, env)
	if got := findingsOf(rep, "shard"); len(got) != 1 || !strings.Contains(got[0].Problem, "no berth controller is running") ||
		!strings.Contains(got[0].Problem, "4 Releases") {
		t.Fatalf("with no controller running, berth doctor's shard findings are %+v, want one saying no controller runs", got)
	}

	one := runShard(t, env, "one")
	waiting := releasetest.WaitFor(t, c, ns, "app", "waits for db of shard two", func(rel *v1alpha1.Release) bool {
		ready := releasetest.Condition(rel, controller.ConditionReady)
		return ready != nil && ready.Reason == controller.ReasonDependencyNotReady
	})
	// Read from the API server, past shard one's cache: db exists, it is only not reconciled.
	if msg := releasetest.Condition(waiting, controller.ConditionReady).Message; !strings.Contains(msg, "db (generation 1 not reconciled yet)") {
		t.Errorf("app waits with %q, want it to see db, of generation 1 not reconciled yet", msg)
	}
	for _, name := range []string{"db", "lost", "plain"} {
		err := one.GetCache().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.Release{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("shard one's cache holds Release %s of another shard (get: %v)", name, err)
		}
	}

	runShard(t, env, "two")
	releasetest.WaitFor(t, c, ns, "db", "is installed by shard two", readyAt(1))
	releasetest.WaitFor(t, c, ns, "app", "is installed by shard one once db is Ready", readyAt(1))

	// A shard watches the ConfigMaps its Releases read: new values upgrade db.
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Update(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "db-values"}, Data: map[string]string{"values.yaml": "size: 2\n"},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, ns, "db", "is upgraded to its ConfigMap's new values", readyAt(2))

	// Nothing reconciled the Releases of no running shard.
	for _, name := range []string{"lost", "plain"} {
		var rel v1alpha1.Release
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &rel); err != nil {
			t.Fatal(err)
		}
		if len(rel.Status.Conditions) != 0 || rel.Status.ObservedGeneration != 0 || len(rel.Finalizers) != 0 {
			t.Errorf("Release %s of no running shard was reconciled: finalizers %v, status %+v", name, rel.Finalizers, rel.Status)
		}
	}

	// Each shard elects its leader with its own Lease, which says what it serves.
	leases := map[string]string{}
	for _, sel := range []string{"sharding.berth.dev/key=one", "sharding.berth.dev/key=two"} {
		shard, err := controller.ParseShard(sel)
		if err != nil {
			t.Fatal(err)
		}
		leases[shard.LeaseName()] = sel
		waitForPresence(t, env, shard.LeaseName(), sel)
	}
	if len(leases) != 2 {
		t.Fatalf("the two shards share a leader election Lease: %v", leases)
	}

	// berth doctor names the Releases no controller serves, with the shard to deploy.
	rep = doctorOf(t, env)
	got := findingsOf(rep, "shard")
	byName := map[string]doctor.Finding{}
	for _, f := range got {
		byName[f.Object.Name] = f
	}
	if len(got) != 2 || byName["lost"].Object.Kind != "Release" || byName["plain"].Object.Kind != "Release" {
		t.Fatalf("berth doctor's shard findings are %+v, want Releases lost and plain", got)
	}
	if f := byName["lost"]; !strings.Contains(f.Problem, `shard "three"`) || !strings.Contains(f.Fix, "deploy a shard for three") {
		t.Errorf("the finding of lost is %+v, want it to name shard three and say to deploy it", f)
	}
	if f := byName["plain"]; !strings.Contains(f.Problem, "no "+v1alpha1.ShardKeyLabel+" label") {
		t.Errorf("the finding of plain is %+v, want it to say it is of no shard", f)
	}

	// Deletion across shards: db waits for app, of the other shard, to be gone.
	for _, name := range []string{"lost", "plain", "db"} {
		if err := c.Delete(ctx, &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	releasetest.WaitFor(t, c, ns, "db", "waits for app of shard one", func(rel *v1alpha1.Release) bool {
		ready := releasetest.Condition(rel, controller.ConditionReady)
		return ready != nil && ready.Reason == controller.ReasonDependentsExist && strings.Contains(ready.Message, "app")
	})
	if err := c.Delete(ctx, &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitGone(t, c, ns, "app")
	releasetest.WaitGone(t, c, ns, "db")
}

// TestShardInvalidSelector: a selector that does not parse is refused, named, before the
// cluster is touched (the kubeconfig given does not exist).
func TestShardInvalidSelector(t *testing.T) {
	t.Parallel()
	for _, sel := range []string{"key in (a", "a=b=c", "!"} {
		_, stderr, err := berthtest.RunBerth(t, "controller", "--watch-label-selector", sel,
			"--kubeconfig", "/nonexistent/kubeconfig", "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
		if err == nil {
			t.Errorf("berth controller --watch-label-selector %q started", sel)
			continue
		}
		msg := err.Error() + stderr
		if !strings.Contains(msg, "--watch-label-selector") || !strings.Contains(msg, `"`+sel+`"`) || strings.Contains(msg, "nonexistent") {
			t.Errorf("berth controller --watch-label-selector %q: %q, want the selector named, before the kubeconfig is read", sel, msg)
		}
	}
}

// runShard runs a controller of the test's namespace serving the Releases of shard key (as the
// chart runs it), with leader election in the namespace, until the test ends, and returns its
// manager.
func runShard(t *testing.T, env *testenv.Env, key string) manager.Manager {
	t.Helper()
	sel := v1alpha1.ShardKeyLabel + "=" + key
	logs := slog.NewTextHandler(t.Output(), nil).WithAttrs([]slog.Attr{slog.String("shard", key)})
	mgr, err := controller.NewManager(env.Config, controller.Options{
		Concurrency: 2, MetricsBindAddress: "0", HealthProbeBindAddress: "0", CacheDir: t.TempDir(),
		Namespace: env.Namespace, Identity: "shard-" + key, WatchLabelSelector: sel,
		LeaderElection: true, LeaderElectionNamespace: env.Namespace,
		Logger: logr.FromSlogHandler(logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller of shard %s: %v", sel, err)
		}
	})
	return mgr
}

// waitForPresence waits until the leader election Lease name of the test's namespace is held
// and says it serves sel.
func waitForPresence(t *testing.T, env *testenv.Env, name, sel string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, releasetest.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" &&
			l.Labels[v1alpha1.ControllerLabel] != "" &&
			l.Annotations[v1alpha1.WatchLabelSelectorAnnotation] == sel &&
			l.Annotations[v1alpha1.WatchNamespaceAnnotation] == env.Namespace, nil
	})
	if err != nil {
		t.Fatalf("wait until Lease %s/%s is held and says it serves %s: %v", env.Namespace, name, sel, err)
	}
}

// doctorOf runs berth doctor on the test's namespace and returns its report.
func doctorOf(t *testing.T, env *testenv.Env) doctor.Report {
	t.Helper()
	stdout, stderr, err := berthtest.Berth(t, env, "doctor", "-o", "json")
	var rep doctor.Report
	if jerr := json.Unmarshal([]byte(stdout), &rep); jerr != nil {
		t.Fatalf("berth doctor printed no report (%v): %v\n%s\n%s", err, jerr, stdout, stderr)
	}
	if code := cli.ExitCode(err); code != 0 && code != cli.ExitDoctorWarnings {
		t.Fatalf("berth doctor exited %d: %v\n%s", code, err, stdout)
	}
	return rep
}

// findingsOf are the findings of check in rep.
func findingsOf(rep doctor.Report, check string) []doctor.Finding {
	var out []doctor.Finding
	for _, f := range rep.Findings {
		if f.Check == check {
			out = append(out, f)
		}
	}
	return out
}
