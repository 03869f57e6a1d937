package lifecycle

import (
	"maps"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// unchangedChart has objects the API server fills in (a Deployment, a Service), a Secret written
// with stringData and a ConfigMap with a value.
var unchangedChart = map[string]string{
	"values.yaml": "greeting: hello\n",
	"templates/objects.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data:
  greeting: {{ .Values.greeting | quote }}
  static: "x"
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: hunter2}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: web}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: web
      containers: [{name: web, image: example.invalid/web}]
`,
}

// unchangedObjects are the chart's objects, as resource/name.
var unchangedObjects = []string{"configmaps/settings", "secrets/creds", "serviceaccounts/web", "services/web", "deployments/web"}

// berthAgent is the user agent of berth's requests.
const berthAgent = "berth"

// TestUpgradeWritesOnlyWhatChanges upgrades a release and reads, in the API server's audit log,
// every request berth made. An upgrade with the same chart and values writes none of the
// release's objects: every object is unchanged, with its resourceVersion, and the only writes are
// the release's records and berth's lease and journal. An upgrade that changes one value writes
// that object alone, and so does an upgrade with the same values after the object was edited by
// hand, which puts the chart's value back. With --take-ownership, every object is written, and so
// it is when berth first upgrades a release Helm installed with client-side apply (it adopts
// Helm's fields), though not after; a release Helm v4 applied server-side, under the field
// manager berth shares, has nothing to adopt and nothing is written.
func TestUpgradeWritesOnlyWhatChanges(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "unchanged", unchangedChart)
	berthtest.MustBerth(t, env, "install", "web", chart, "--wait")

	t.Log("an upgrade with the same chart and values")
	versions := resourceVersions(t, env)
	writes, summary := upgrade(t, env, "web", chart)
	if len(writes) != 0 {
		t.Errorf("writes to the release's objects: %v, want none", writes)
	}
	if want := "done: 5 unchanged in"; !strings.Contains(summary, want) {
		t.Errorf("summary %q, want %q", summary, want)
	}
	if got := resourceVersions(t, env); !maps.Equal(got, versions) {
		t.Errorf("resourceVersions changed from %v to %v", versions, got)
	}

	t.Log("an upgrade that changes one value")
	writes, summary = upgrade(t, env, "web", chart, "--set", "greeting=bye")
	if want := []string{"patch configmaps/settings"}; !slices.Equal(writes, want) {
		t.Errorf("writes to the release's objects: %v, want %v", writes, want)
	}
	if want := "done: 1 configured, 4 unchanged in"; !strings.Contains(summary, want) {
		t.Errorf("summary %q, want %q", summary, want)
	}
	if got := greeting(t, env); got != "bye" {
		t.Errorf("greeting %q after the upgrade, want bye", got)
	}

	t.Log("an upgrade with the same values after an edit by hand")
	cms := env.Resource(t, "v1", "ConfigMap")
	cm, err := cms.Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Object["data"].(map[string]any)["greeting"] = "edited"
	if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	writes, summary = upgrade(t, env, "web", chart, "--set", "greeting=bye")
	if want := []string{"patch configmaps/settings"}; !slices.Equal(writes, want) {
		t.Errorf("writes to the release's objects: %v, want %v", writes, want)
	}
	if want := "done: 1 configured, 4 unchanged in"; !strings.Contains(summary, want) {
		t.Errorf("summary %q, want %q", summary, want)
	}
	if got := greeting(t, env); got != "bye" {
		t.Errorf("greeting %q after the upgrade, want the chart's bye back", got)
	}

	t.Log("an upgrade with the same values and --take-ownership")
	writes, _ = upgrade(t, env, "web", chart, "--set", "greeting=bye", "--take-ownership")
	assertAllWritten(t, writes)

	t.Log("berth's first upgrade of a release Helm v4 installed server-side, with the same chart and values")
	ssa := testenv.New(t)
	berthtest.MustHelm(t, ssa, "install", "web", chart, "--wait")
	if writes, _ = upgrade(t, ssa, "web", chart); len(writes) != 0 {
		t.Errorf("writes to the objects Helm applied under the field manager berth shares: %v, want none", writes)
	}

	t.Log("berth's first upgrade of a release Helm installed client-side, with the same chart and values")
	other := testenv.New(t)
	berthtest.MustHelm(t, other, "install", "web", chart, "--wait", "--server-side=false")
	writes, _ = upgrade(t, other, "web", chart)
	assertAllWritten(t, writes)
	writes, _ = upgrade(t, other, "web", chart)
	if len(writes) != 0 {
		t.Errorf("writes to the release's objects once berth upgraded it: %v, want none", writes)
	}
}

// assertAllWritten checks that writes applied every object of the chart.
func assertAllWritten(t *testing.T, writes []string) {
	t.Helper()
	for _, obj := range unchangedObjects {
		if !slices.Contains(writes, "patch "+obj) {
			t.Errorf("writes to the release's objects: %v, want %s applied", writes, obj)
		}
	}
}

func greeting(t *testing.T, env *testenv.Env) string {
	t.Helper()
	cm, err := env.Resource(t, "v1", "ConfigMap").Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Object["data"].(map[string]any)["greeting"].(string)
}

// resourceVersions returns the resourceVersion of each of the chart's objects.
func resourceVersions(t *testing.T, env *testenv.Env) map[string]string {
	t.Helper()
	kinds := map[string][2]string{
		"configmaps": {"v1", "ConfigMap"}, "secrets": {"v1", "Secret"}, "serviceaccounts": {"v1", "ServiceAccount"},
		"services": {"v1", "Service"}, "deployments": {"apps/v1", "Deployment"},
	}
	out := map[string]string{}
	for _, obj := range unchangedObjects {
		resource, name, _ := strings.Cut(obj, "/")
		k := kinds[resource]
		live, err := env.Resource(t, k[0], k[1]).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[obj] = live.GetResourceVersion()
	}
	return out
}

// bookkeeping reports whether a write is to an object berth keeps beside the release's own:
// its records, its lease or its journal.
func bookkeeping(ev testenv.AuditEvent) bool {
	switch {
	case ev.APIGroup == "" && ev.Resource == "secrets":
		return strings.HasPrefix(ev.Name, "sh.helm.release.v1.") || strings.HasPrefix(ev.Name, "berth.journal.")
	case ev.APIGroup == "coordination.k8s.io" && ev.Resource == "leases":
		return true
	}
	return false
}

// upgrade runs berth upgrade in the test's namespace and returns, from the API server's audit
// log, berth's writes to the chart's objects (verb and object, in order) and berth's summary
// line. Every other write berth made must be to its records, lease or journal. It logs what
// berth asked.
func upgrade(t *testing.T, env *testenv.Env, args ...string) (writes []string, summary string) {
	t.Helper()
	mark := env.AuditMark(t)
	args = append([]string{"upgrade"}, args...)
	_, stderr := berthtest.MustBerth(t, env, args...)
	for line := range strings.SplitSeq(stderr, "\n") {
		if strings.HasPrefix(line, "done: ") {
			summary = line
		}
	}
	counts := map[string]int{}
	var others []string
	for _, ev := range env.AuditEvents(t, mark) {
		if ev.UserAgent != berthAgent {
			continue
		}
		counts[ev.Verb]++
		if !ev.Write() {
			continue
		}
		if slices.Contains(unchangedObjects, ev.Resource+"/"+ev.Name) {
			writes = append(writes, ev.String())
			continue
		}
		others = append(others, ev.String())
		if !bookkeeping(ev) {
			t.Errorf("berth %s wrote %s, neither an object of the release nor its record, lease or journal", strings.Join(args, " "), ev)
		}
	}
	t.Logf("berth's requests by verb: %v; writes to the release's objects: %v; other writes: %v", counts, writes, others)
	if !slices.ContainsFunc(others, func(w string) bool { return strings.HasPrefix(w, "create secrets/sh.helm.release.v1.") }) {
		t.Errorf("berth %s: no release record created in the audit log, want one", strings.Join(args, " "))
	}
	return writes, summary
}

// TestNoOpUpgradeSendsNothingForUnchangedObjects upgrades a release with the same chart and
// values: the ConfigMap, whose live fields are berth's and as the chart sets them, gets no
// request beyond being read, not even a dry run; after it was edited by hand, it is dry-run and
// put back.
func TestNoOpUpgradeSendsNothingForUnchangedObjects(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "plain", map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {greeting: hello}\n",
	})
	berthtest.MustBerth(t, env, "install", "plain", chart)
	requests := func() []string {
		mark := env.AuditMark(t)
		berthtest.MustBerth(t, env, "upgrade", "plain", chart)
		var out []string
		for _, ev := range env.AuditEvents(t, mark) {
			if ev.UserAgent == berthAgent && ev.Resource == "configmaps" && ev.Name == "settings" && ev.Verb != "get" && ev.Verb != "list" {
				out = append(out, ev.String())
			}
		}
		return out
	}
	if got := requests(); len(got) > 0 {
		t.Errorf("a no-op upgrade sent for the unchanged ConfigMap: %v, want nothing", got)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Patch(t.Context(), "settings", types.MergePatchType,
		[]byte(`{"data":{"greeting":"changed by hand"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if got := requests(); len(got) == 0 {
		t.Error("an upgrade after the ConfigMap was edited by hand sent nothing for it, want its dry run and apply")
	}
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil || cm.Data["greeting"] != "hello" {
		t.Errorf("ConfigMap after the upgrade: %v (%v), want the chart's greeting back", cm.Data, err)
	}
}

// TestNoOpUpgradeOfCRDsSendsNothing installs a chart of ten CRDs as templates (as
// prometheus-operator-crds ships them: lists of versions, printer columns, short names, schemas
// with required fields and enums) and upgrades it with no change: no request goes to any of the
// CRDs beyond reading them, neither a dry run nor an apply, and all ten are unchanged. An upgrade
// that changes one of them dry-runs and applies that one.
func TestNoOpUpgradeOfCRDsSendsNothing(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	group := "tencrds-" + berthtest.Suffix(env) + ".example.com"
	chart := "testdata/tencrds"
	var names []string
	for _, kind := range []string{"Alertmanager", "PodMonitor", "Probe", "Prometheus", "PrometheusRule", "ScrapeConfig",
		"ServiceMonitor", "ThanosRuler", "AlertmanagerConfig", "PrometheusAgent"} {
		names = append(names, strings.ToLower(kind)+"s."+group) // the chart's plurals
	}
	t.Cleanup(func() { deleteCRDs(t, env, names...) })
	berthtest.MustBerth(t, env, "install", "crds", chart, "--set", "group="+group, "--wait")

	// upgrade runs berth upgrade with args and returns berth's requests to the CRDs other than
	// reads, and its summary line.
	upgrade := func(args ...string) (requests []string, summary string) {
		t.Helper()
		mark := env.AuditMark(t)
		_, stderr := berthtest.MustBerth(t, env, append([]string{"upgrade", "crds", chart, "--set", "group=" + group, "--wait"}, args...)...)
		for line := range strings.SplitSeq(stderr, "\n") {
			if strings.HasPrefix(line, "done: ") {
				summary = line
			}
		}
		for _, ev := range env.ClusterAuditEvents(t, mark) {
			if ev.UserAgent == berthAgent && ev.Resource == "customresourcedefinitions" && slices.Contains(names, ev.Name) &&
				ev.Verb != "get" && ev.Verb != "list" && ev.Verb != "watch" {
				requests = append(requests, ev.String())
			}
		}
		return requests, summary
	}

	requests, summary := upgrade()
	if len(requests) != 0 {
		t.Errorf("a no-op upgrade sent for the unchanged CRDs: %v, want nothing", requests)
	}
	if want := "done: 10 unchanged in"; !strings.Contains(summary, want) {
		t.Errorf("summary %q, want %q", summary, want)
	}

	requests, summary = upgrade("--set", "changed=Probe")
	probes := "customresourcedefinitions/probes." + group
	if want := []string{"patch " + probes + " (dry run)", "patch " + probes}; !slices.Equal(requests, want) {
		t.Errorf("an upgrade that changes one CRD sent: %v, want %v", requests, want)
	}
	if want := "done: 1 configured, 9 unchanged in"; !strings.Contains(summary, want) {
		t.Errorf("summary %q, want %q", summary, want)
	}
}
