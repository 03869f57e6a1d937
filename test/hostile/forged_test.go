package hostile_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// forgedReady waits until the Release name of ns is Ready at its generation.
func forgedReady(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	releasetest.WaitFor(t, releasetest.Client(t, env), env.Namespace, name, "is Ready", func(rel *v1alpha1.Release) bool {
		cond := releasetest.Condition(rel, controller.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == rel.Generation
	})
}

// TestForgedJournalTakesNothing: a tenant writes, for a Release of its own, the record of a
// pending install and its journal, whose plan applies a ConfigMap another release owns with
// takeOwnership. The controller resumes it with what the Release grants, which is not
// takeOwnership: the other release's ConfigMap stays as it was, and the Release is refused by
// name.
func TestForgedJournalTakesNothing(t *testing.T) {
	repoURL := releasetest.ServeCharts(t, berthtest.PackageNewChart(t, "owner", "0.1.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\ndata: {owner: victim}\n",
	}), berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: hello}\n",
	}))
	env, c, p, q := attacked(t)
	if err := c.Create(t.Context(), p.release(env.Namespace, "victim", `
  serviceAccountName: deployer
  chart: {repository: "`+repoURL+`", name: owner, version: "0.1.0"}`)); err != nil {
		t.Fatal(err)
	}
	forgedReady(t, env, "victim")

	// The forged state: a record of a pending install of thief, revision 1, holding the
	// ConfigMap, and a journal that applies it taking it over.
	stolen := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: " + env.Namespace + "}\ndata: {owner: thief}\n"
	rec := &release.Release{Name: "thief", Namespace: env.Namespace, Version: 1, Manifest: stolen,
		Chart: &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "web", Version: "0.3.0"}},
		Info:  &release.Info{Status: release.StatusPendingInstall}}
	if err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).Create(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	shared := resource.Identity{Kind: "ConfigMap", Namespace: env.Namespace, Name: "shared"}
	j := &release.Journal{Release: "thief", Operation: release.OpInstall, Revision: 1, State: release.JournalRunning,
		Started: time.Now(), Updated: time.Now(), Options: release.JournalOptions{TakeOwnership: true},
		Plan: &plan.Plan{Steps: []plan.Step{
			{ID: "apply/ConfigMap", Action: plan.Apply, Objects: []resource.Identity{shared}},
			{ID: "record", Action: plan.Record, Revision: 1},
		}}}
	if _, err := release.NewJournals(env.Client.CoreV1(), env.Namespace).Put(t.Context(), j, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), p.release(env.Namespace, "thief", `
  serviceAccountName: deployer
  timeout: 1m
  chart: {repository: "`+repoURL+`", name: web, version: "0.3.0"}`)); err != nil {
		t.Fatal(err)
	}
	q.bystander(t)

	cond := sizesNotReady(t, c, env.Namespace, "thief")
	if !strings.Contains(cond.Message, "ConfigMap/"+env.Namespace+"/shared") {
		t.Errorf("Release thief: %s %q, want it to name ConfigMap/%s/shared", cond.Reason, cond.Message, env.Namespace)
	}
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["owner"] != "victim" || cm.Annotations["meta.helm.sh/release-name"] != "victim" {
		t.Errorf("ConfigMap shared after the forged journal: data %v, annotations %v; want it victim's, unchanged", cm.Data, cm.Annotations)
	}
}

// TestForgedLeaseOfAYear: a tenant writes, for each of two Releases of its own, a Lease held
// by no berth, renewed now, for a year. The controller takes each over once it has seen it
// unchanged for release.MaxLeaseDuration, and installs the Release; meanwhile the two hold the
// namespace's share of the workers, and another namespace's Release is Ready as quickly as ever.
func TestForgedLeaseOfAYear(t *testing.T) {
	repoURL := releasetest.ServeCharts(t, namedChart(t))
	env, c, p, q := attacked(t)

	year := int32(365 * 24 * 3600)
	names := []string{"held-1", "held-2"}
	for _, name := range names {
		now := metav1.NewMicroTime(time.Now())
		who := "squatter"
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: release.LeaseKey(name), Namespace: env.Namespace,
				Annotations: map[string]string{release.LeaseHostAnnotation: "elsewhere", release.LeasePIDAnnotation: "1"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &who, LeaseDurationSeconds: &year, AcquireTime: &now, RenewTime: &now},
		}
		if _, err := env.Client.CoordinationV1().Leases(env.Namespace).Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for _, name := range names {
		rel := sizesRelease(p, env.Namespace, name, repoURL, "")
		rel.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	q.bystander(t)

	for _, name := range names {
		forgedReady(t, env, name)
	}
	took := time.Since(start)
	// Each Lease is taken over once seen unchanged for MaxLeaseDuration (forgedReady waits
	// releasetest.WaitTimeout, not the year the Leases claim).
	t.Logf("two Releases behind Leases of a year: Ready after %v", took.Round(time.Millisecond))
	lease, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(t.Context(), release.LeaseKey(names[0]), metav1.GetOptions{})
	if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity == "squatter" {
		t.Errorf("Lease %s still held by the squatter: %s", lease.Name, fmt.Sprint(lease.Spec))
	}
}
