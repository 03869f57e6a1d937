package lifecycle

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// tool is one of the twins a test runs the same command through: Helm v4's binary or berth.
type tool string

const (
	helmTool  tool = "helm"
	berthTool tool = "berth"
)

// run runs the tool with args against the test's cluster and namespace.
func (tl tool) run(t *testing.T, env *testenv.Env, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	if tl == helmTool {
		return berthtest.Helm(t, env, args...)
	}
	return berthtest.Berth(t, env, args...)
}

// must runs the tool and fails the test when it fails.
func (tl tool) must(t *testing.T, env *testenv.Env, args ...string) string {
	t.Helper()
	stdout, stderr, err := tl.run(t, env, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", tl, strings.Join(args, " "), err, stderr)
	}
	return stdout
}

// mustFail runs the tool, expects it to fail, and returns its error and stderr.
func (tl tool) mustFail(t *testing.T, env *testenv.Env, args ...string) string {
	t.Helper()
	stdout, stderr, err := tl.run(t, env, args...)
	if err == nil {
		t.Fatalf("%s %s succeeded, want a failure\nstdout:\n%s", tl, strings.Join(args, " "), stdout)
	}
	return err.Error() + "\n" + stderr
}

// twins runs do for helm and for berth, each in a namespace of its own, one after the other,
// and returns what each returned.
func twins[T any](t *testing.T, do func(t *testing.T, tl tool, env *testenv.Env) T) (fromHelm, fromBerth T) {
	t.Helper()
	return do(t, helmTool, testenv.New(t)), do(t, berthTool, testenv.New(t))
}

// configMapData returns the data of a ConfigMap of the test's namespace; nil when there is none.
func configMapData(t *testing.T, env *testenv.Env, name string) map[string]string {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get ConfigMap %s: %v", name, err)
	}
	if cm.Data == nil {
		return map[string]string{}
	}
	return cm.Data
}

// helmHistory is the history of a release as helm history -o json prints it: revisions, their
// status and, where keep says so, their description.
func helmHistory(t *testing.T, env *testenv.Env, name string, keep func(revision) bool) []revision {
	t.Helper()
	h := parseHistory(t, berthtest.MustHelm(t, env, "history", name, "-o", "json"))
	for i := range h {
		if !keep(h[i]) {
			h[i].Description = ""
		}
	}
	return h
}

// namedChart renders .Release.Revision and can fail its pre-upgrade hook.
var namedChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: named\nversion: 0.1.0\n",
	"values.yaml": "failUpgrade: false\n",
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}}
data: {revision: "{{ .Release.Revision }}", install: "{{ .Release.IsInstall }}"}
`,
	"templates/hook.yaml": `{{- if .Values.failUpgrade }}
apiVersion: v1
kind: Pod
metadata:
  name: refuse
  annotations: {helm.sh/hook: pre-upgrade, devcluster.berth.dev/outcome: fail}
spec:
  restartPolicy: Never
  containers: [{name: run, image: example.invalid/run}]
{{- end }}
`,
}

// TestReplaceMatchesHelm: install takes the name of a release uninstalled with its history kept
// only with --replace, and of a failed one too, as helm does: the uninstalled revision is
// superseded, the failed one left as it is, and the new revision follows the last (rendered as
// revision 1, as Helm renders every install).
func TestReplaceMatchesHelm(t *testing.T) {
	t.Parallel()
	chart := berthtest.WriteChart(t, "named", namedChart)
	type outcome struct {
		History        []revision
		Refused        bool
		Data1, Data2   map[string]string
		ReplacedFailed bool
	}
	fromHelm, fromBerth := twins(t, func(t *testing.T, tl tool, env *testenv.Env) outcome {
		var o outcome
		tl.must(t, env, "install", "r", chart)
		tl.must(t, env, "uninstall", "r", "--keep-history")
		_, _, err := tl.run(t, env, "install", "r", chart)
		o.Refused = err != nil
		tl.must(t, env, "install", "r", chart, "--replace")
		o.Data1 = configMapData(t, env, "r")
		tl.mustFail(t, env, "upgrade", "r", chart, "--set", "failUpgrade=true")
		tl.must(t, env, "install", "r", chart, "--replace")
		o.Data2 = configMapData(t, env, "r")
		o.History = helmHistory(t, env, "r", func(r revision) bool { return r.Status != "failed" })
		return o
	})
	want := []revision{{1, "superseded", "superseded by new release"}, {2, "deployed", "Install complete"},
		{3, "failed", ""}, {4, "deployed", "Install complete"}}
	if diff := cmp.Diff(want, fromHelm.History); diff != "" {
		t.Errorf("helm's history is not what the test expects of it (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(fromHelm, fromBerth); diff != "" {
		t.Errorf("berth's outcome differs from helm's (-helm +berth):\n%s", diff)
	}
	if !fromBerth.Refused {
		t.Error("berth install without --replace took the name of an uninstalled release")
	}
}

// TestGenerateNameMatchesHelm: install without NAME names the release after the chart and the
// time with --generate-name, and renders --name-template, as helm does.
func TestGenerateNameMatchesHelm(t *testing.T) {
	t.Parallel()
	chart := berthtest.WriteChart(t, "named", namedChart)
	fromHelm, fromBerth := twins(t, func(t *testing.T, tl tool, env *testenv.Env) []string {
		tl.must(t, env, "install", chart, "--generate-name")
		tl.must(t, env, "install", chart, "--name-template", `{{ "tpl" }}-{{ add 1 2 }}`, "--set", "x=1")
		var list []struct{ Name string }
		if err := json.Unmarshal([]byte(berthtest.MustHelm(t, env, "list", "-o", "json")), &list); err != nil {
			t.Fatalf("parse helm list: %v", err)
		}
		var names []string
		for _, r := range list {
			names = append(names, regexp.MustCompile(`-\d{10}$`).ReplaceAllString(r.Name, "-TIME"))
		}
		slices.Sort(names)
		return names
	})
	if want := []string{"named-TIME", "tpl-3"}; !slices.Equal(fromBerth, want) || !slices.Equal(fromHelm, want) {
		t.Errorf("release names: helm %v, berth %v; want %v", fromHelm, fromBerth, want)
	}
}

// TestSkipCRDsMatchesHelm: --skip-crds leaves the chart's crds/ alone on install and on the
// install upgrade --install makes, as helm does.
func TestSkipCRDsMatchesHelm(t *testing.T) {
	t.Parallel()
	// No test creates it: this one must not either.
	const group = "skipcrds.berth.test"
	chart := berthtest.WriteChart(t, "gauge", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: gauge\nversion: 0.1.0\n",
		"crds/gauge.yaml":   berthtest.CRD("Gauge", group, "Namespaced", []string{"v1"}, "size"),
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\n",
	})
	fromHelm, fromBerth := twins(t, func(t *testing.T, tl tool, env *testenv.Env) []bool {
		tl.must(t, env, "install", "a", chart, "--skip-crds")
		tl.must(t, env, "upgrade", "b", chart, "--install", "--skip-crds")
		return []bool{configMapData(t, env, "a") != nil && configMapData(t, env, "b") != nil, crdExists(t, env, "gauges."+group)}
	})
	if want := []bool{true, false}; !slices.Equal(fromHelm, want) || !slices.Equal(fromBerth, want) {
		t.Errorf("[ConfigMap created, CRD created]: helm %v, berth %v; want %v", fromHelm, fromBerth, want)
	}
}

// crdExists says whether the CustomResourceDefinition name exists.
func crdExists(t *testing.T, env *testenv.Env, name string) bool {
	t.Helper()
	_, err := env.Resource(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("get CRD %s: %v", name, err)
	}
	return err == nil
}

// renderChart has a values schema, notes in a subchart, a Secret and a getHostByName.
var renderChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: render\nversion: 0.1.0\ndependencies: [{name: sub, version: 0.1.0}]\n",
	"values.yaml": "port: 80\n",
	"values.schema.json": `{"type": "object", "properties": {"port": {"type": "integer"}}}
`,
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: render}
data:
  port: "{{ .Values.port }}"
  dns: {{ if getHostByName "localhost" }}resolved{{ else }}none{{ end }}
`,
	"templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata: {name: render}
stringData: {password: hunter2}
`,
	"templates/NOTES.txt":              "The chart's own notes.\n",
	"charts/sub/Chart.yaml":            "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
	"charts/sub/templates/NOTES.txt":   "The subchart's notes.\n",
	"charts/sub/templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sub}\n",
}

// TestRenderFlagsMatchHelm: --skip-schema-validation, --render-subchart-notes, --enable-dns and
// --hide-notes change what install and upgrade render, record and print as they do in helm.
func TestRenderFlagsMatchHelm(t *testing.T) {
	t.Parallel()
	chart := berthtest.WriteChart(t, "render", renderChart)
	type outcome struct {
		SchemaRefused      bool
		InstallData        map[string]string
		InstallNotes       []string
		InstallPrintsNotes bool
		UpgradeData        map[string]string
		UpgradeNotes       []string
		UpgradePrintsNotes bool
	}
	fromHelm, fromBerth := twins(t, func(t *testing.T, tl tool, env *testenv.Env) outcome {
		var o outcome
		_, _, err := tl.run(t, env, "install", "r", chart, "--set", "port=http")
		o.SchemaRefused = err != nil
		out := tl.must(t, env, "install", "r", chart, "--set", "port=http", "--skip-schema-validation",
			"--render-subchart-notes", "--enable-dns", "--hide-notes")
		o.InstallPrintsNotes = strings.Contains(out, "NOTES:")
		o.InstallData = configMapData(t, env, "render")
		o.InstallNotes = noteLines(berthtest.LastRecord(t, env, "r").Info.Notes)
		out = tl.must(t, env, "upgrade", "r", chart, "--set", "port=8080")
		o.UpgradePrintsNotes = strings.Contains(out, "NOTES:\nThe chart's own notes.")
		o.UpgradeData = configMapData(t, env, "render")
		o.UpgradeNotes = noteLines(berthtest.LastRecord(t, env, "r").Info.Notes)
		return o
	})
	want := outcome{
		SchemaRefused: true,
		InstallData:   map[string]string{"port": "http", "dns": "resolved"},
		InstallNotes:  []string{"The chart's own notes.", "The subchart's notes."},
		UpgradeData:   map[string]string{"port": "8080", "dns": "none"}, UpgradeNotes: []string{"The chart's own notes."},
		UpgradePrintsNotes: true,
	}
	if diff := cmp.Diff(want, fromHelm); diff != "" {
		t.Errorf("helm's outcome is not what the test expects of it (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(fromHelm, fromBerth); diff != "" {
		t.Errorf("berth's outcome differs from helm's (-helm +berth):\n%s", diff)
	}
}

// noteLines are the lines of notes, sorted: Helm joins the notes of several charts in an order
// of its own.
func noteLines(notes string) []string {
	var lines []string
	for l := range strings.SplitSeq(notes, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines
}

// TestHideSecretMatchesHelm: --hide-secret hides the Secrets of a dry run's manifest, and is
// refused without --dry-run, as in helm; --description is a dry-run upgrade's description.
func TestHideSecretMatchesHelm(t *testing.T) {
	t.Parallel()
	chart := berthtest.WriteChart(t, "render", renderChart)
	type outcome struct {
		Manifest, UpgradeManifest, Description string
		InstallRefused, UpgradeRefused         bool
	}
	fromHelm, fromBerth := twins(t, func(t *testing.T, tl tool, env *testenv.Env) outcome {
		var o outcome
		o.Manifest = manifestSection(tl.must(t, env, "install", "r", chart, "--dry-run=client", "--hide-secret"))
		o.InstallRefused = strings.Contains(tl.mustFail(t, env, "install", "r", chart, "--hide-secret"),
			"hiding Kubernetes secrets requires a dry-run mode")
		tl.must(t, env, "install", "r", chart)
		o.UpgradeManifest = manifestSection(tl.must(t, env, "upgrade", "r", chart, "--dry-run=server", "--hide-secret"))
		out := tl.must(t, env, "upgrade", "r", chart, "--dry-run=client", "--description", "checked")
		o.Description = regexp.MustCompile(`(?m)^DESCRIPTION: .*$`).FindString(out)
		o.UpgradeRefused = strings.Contains(tl.mustFail(t, env, "upgrade", "r", chart, "--hide-secret"),
			"hiding Kubernetes secrets requires a dry-run mode")
		return o
	})
	if !strings.Contains(fromHelm.Manifest, "# HIDDEN: The Secret output has been suppressed") || strings.Contains(fromHelm.Manifest, "hunter2") {
		t.Errorf("helm's manifest does not hide the Secret:\n%s", fromHelm.Manifest)
	}
	if diff := cmp.Diff(fromHelm, fromBerth); diff != "" {
		t.Errorf("berth's outcome differs from helm's (-helm +berth):\n%s", diff)
	}
}

// manifestSection is what a dry run prints from MANIFEST: to NOTES:.
func manifestSection(out string) string {
	i := strings.Index(out, "MANIFEST:")
	if i < 0 {
		return "no MANIFEST: in\n" + out
	}
	out = out[i:]
	if j := strings.Index(out, "\nNOTES:"); j >= 0 {
		out = out[:j]
	}
	return out
}

// peekChart renders what lookup and Capabilities read.
var peekChart = map[string]string{
	"Chart.yaml": "apiVersion: v2\nname: peek\nversion: 0.1.0\n",
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: peek}
data:
  seen: "{{ dig "data" "color" "nothing" (lookup "v1" "ConfigMap" .Release.Namespace "existing") }}"
  kube: "{{ .Capabilities.KubeVersion.Version }}"
  dns: {{ if getHostByName "localhost" }}resolved{{ else }}none{{ end }}
`,
}

// TestTemplateDryRunServerMatchesHelm: helm template --dry-run=server (and the deprecated
// --validate) renders against the cluster, lookup and Capabilities included; --enable-dns lets
// getHostByName resolve.
func TestTemplateDryRunServerMatchesHelm(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "peek", peekChart)
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Create(t.Context(), configMap("existing", "color", "teal"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--dry-run=server"}, {"--validate"}, {"--dry-run=server", "--kube-version", "1.30.2", "--enable-dns"},
		// Offline, the kube version is given: without it each takes its own build's default.
		{"--dry-run=client", "--kube-version", "1.30.2"}, {"--dry-run", "--kube-version", "1.30.2"},
		{"--enable-dns", "--kube-version", "1.30.2"},
		// install's flags, which change nothing template prints
		{"--kube-version", "1.30.2", "--create-namespace", "--replace", "--skip-crds", "--labels", "a=b", "--description", "x",
			"--wait", "--wait-for-jobs", "--timeout", "1m", "--take-ownership", "--force-replace", "--atomic", "--hide-notes",
			"--render-subchart-notes", "--server-side=false", "--disable-openapi-validation", "--rollback-on-failure"},
	} {
		args := append([]string{"template", "t", chart}, args...)
		helmOut := berthtest.MustHelm(t, env, args...)
		berthOut, _ := berthtest.MustBerth(t, env, args...)
		if helmOut != berthOut {
			t.Errorf("%s: berth's output differs from helm's:\n%s", strings.Join(args[3:], " "), cmp.Diff(helmOut, berthOut))
		}
	}
	out, _ := berthtest.MustBerth(t, env, "template", "t", chart, "--dry-run=server")
	if !strings.Contains(out, `seen: "teal"`) {
		t.Errorf("template --dry-run=server did not read the ConfigMap through lookup:\n%s", out)
	}
}

// configMap is a ConfigMap named name with one key.
func configMap(name, key, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{key: value}}
}

// strayFieldChart has a ConfigMap with a field no ConfigMap has.
var strayFieldChart = map[string]string{
	"Chart.yaml": "apiVersion: v2\nname: stray\nversion: 0.1.0\n",
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: stray}
spec: {color: teal}
data: {a: "1"}
`,
}

// TestOpenAPIValidationMatchesHelm: an object with a field its schema does not declare is refused
// with or without --disable-openapi-validation, as Helm v4 refuses it: both apply server-side,
// and the API server's server-side apply refuses such a field whatever the request's field
// validation (helm's flag turns off only a client-side check a current API server makes
// redundant). berth refuses it at its dry run, before anything changes.
func TestOpenAPIValidationMatchesHelm(t *testing.T) {
	t.Parallel()
	chart := berthtest.WriteChart(t, "stray", strayFieldChart)
	type outcome struct {
		Refused, Created, RefusedDisabled, CreatedDisabled bool
	}
	fromHelm, fromBerth := twins(t, func(t *testing.T, tl tool, env *testenv.Env) outcome {
		var o outcome
		msg := tl.mustFail(t, env, "install", "s", chart)
		o.Refused = strings.Contains(msg, ".spec: field not declared in schema")
		o.Created = configMapData(t, env, "stray") != nil
		msg = tl.mustFail(t, env, "install", "s", chart, "--disable-openapi-validation", "--replace")
		o.RefusedDisabled = strings.Contains(msg, ".spec: field not declared in schema")
		o.CreatedDisabled = configMapData(t, env, "stray") != nil
		if tl == berthTool {
			berthtest.AssertNotRecorded(t, env, "s") // helm records a failed revision
		}
		return o
	})
	if want := (outcome{Refused: true, RefusedDisabled: true}); fromHelm != want || fromBerth != want {
		t.Errorf("helm: %+v, berth %+v; want %+v for both", fromHelm, fromBerth, want)
	}
}

// TestInstallForceReplace: install takes --force-replace as upgrade does: an object it takes
// over (--take-ownership) whose immutable field differs is refused without it, and deleted and
// created again with it. (Helm's --force-replace sends the object whole, a PUT the API server
// refuses all the same for an immutable field.)
func TestInstallForceReplace(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "web", selectorChart)
	berthtest.MustBerth(t, env, "install", "old", chart, "--wait")
	before := liveDeployment(t, env)
	_, _, err := berthtest.Berth(t, env, "install", "new", chart, "--set", "app=two", "--take-ownership")
	if err == nil || !strings.Contains(err.Error(), "--force-replace") {
		t.Fatalf("install taking over a Deployment of another selector: %v, want it refused, naming --force-replace", err)
	}
	berthtest.MustBerth(t, env, "install", "new", chart, "--set", "app=two", "--take-ownership", "--force-replace", "--wait")
	after := liveDeployment(t, env)
	if after.UID == before.UID || after.Spec.Selector.MatchLabels["app"] != "two" {
		t.Errorf("Deployment web: UID %s selector %v, want a new one (was %s) selecting app=two", after.UID, after.Spec.Selector.MatchLabels, before.UID)
	}
	if rel := after.Annotations[resource.ReleaseNameAnnotation]; rel != "new" {
		t.Errorf("Deployment web belongs to release %q, want new", rel)
	}
}
