package controller_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// canaryCharts are the charts a secret value is sent through, each failing on it its own way.
func canaryCharts(t *testing.T) []string {
	configMap := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-config}\ndata: {password: {{ .Values.password | quote }}}\n"
	return []string{
		// The values schema refuses the value.
		berthtest.PackageNewChart(t, "schema", "0.1.0", map[string]string{
			"values.yaml":        "password: none\n",
			"values.schema.json": `{"type": "object", "properties": {"password": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8}}}`,
			"templates/cm.yaml":  configMap,
		}),
		// A template's required, or fail, prints the value.
		berthtest.PackageNewChart(t, "tmpl", "0.1.0", map[string]string{
			"values.yaml": "password: none\nuseFail: false\n",
			"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: tmpl-config}
data:
{{- if .Values.useFail }}
  password: {{ fail (printf "password %s is refused" .Values.password) }}
{{- else }}
  host: {{ required (printf "db.host is required to use password %s" .Values.password) .Values.host }}
{{- end }}
`,
		}),
		// A hook prints the value to its log, then fails.
		berthtest.PackageNewChart(t, "hook", "0.1.0", map[string]string{
			"values.yaml":       "password: none\n",
			"templates/cm.yaml": configMap,
			"templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {helm.sh/hook: pre-install}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        devcluster.berth.dev/outcome: fail
        devcluster.berth.dev/log: |
          connecting with password {{ .Values.password }}
          password {{ .Values.password }} refused
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: example.invalid/migrate}]
`,
		}),
		// Nothing fails: the value arrives as it is.
		berthtest.PackageNewChart(t, "settings", "0.1.0", map[string]string{
			"values.yaml":       "password: none\n",
			"templates/cm.yaml": configMap,
		}),
	}
}

// canaryRelease is a Release of chart, with values from valuesFrom.
func canaryRelease(ns, name, repoURL, chart string, values string, valuesFrom ...v1alpha1.ValuesReference) *v1alpha1.Release {
	rel := &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ReleaseSpec{
			ServiceAccountName: "deployer",
			Chart:              v1alpha1.ChartSource{Repository: repoURL, Name: chart, Version: "0.1.0"},
			ValuesFrom:         valuesFrom,
		},
	}
	if values != "" {
		rel.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(values)}
	}
	return rel
}

// leakWatch captures what the controller writes that others may read, beyond the API: its logs
// (its logger's, and slog's and log's default loggers', which Helm's code writes to) and its
// metrics endpoint.
type leakWatch struct {
	logs    *berthtest.LockedBuffer
	metrics string
}

// runWatchedController runs a controller for the test's namespace whose logs and metrics
// endpoint the returned leakWatch reads. The logs are kept down to the debug level (logr's V(4)),
// beyond the info level berth controller logs at; client-go dumps its requests' bodies from V(8),
// which nothing in berth turns on.
func runWatchedController(t *testing.T, env *testenv.Env, chartOutput bool) *leakWatch {
	t.Helper()
	w := &leakWatch{logs: &berthtest.LockedBuffer{}}
	all := &slog.HandlerOptions{Level: slog.LevelDebug}
	defaultLogger, logOutput, logFlags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(slog.NewTextHandler(w.logs, all)))
	t.Cleanup(func() {
		slog.SetDefault(defaultLogger)
		log.SetOutput(logOutput)
		log.SetFlags(logFlags)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.metrics = "http://" + l.Addr().String() + "/metrics"
	l.Close()
	releasetest.RunController(t, env, controller.Options{
		Namespace: env.Namespace, CacheDir: t.TempDir(),
		MetricsBindAddress: l.Addr().String(), MetricsPlainHTTP: true,
		Logger:            logr.FromSlogHandler(slog.NewTextHandler(io.MultiWriter(w.logs, t.Output()), all)),
		StatusChartOutput: chartOutput,
	})
	return w
}

// assertNoSecret searches the test namespace's Releases (whole, status and all) and Events, the
// controller's logs and its metrics for each of secrets.
func (w *leakWatch) assertNoSecret(t *testing.T, env *testenv.Env, c client.Client, secrets ...string) {
	t.Helper()
	texts := visibleTexts(t, env, c)
	resp, err := http.Get(w.metrics)
	if err != nil {
		t.Fatalf("scrape the controller's metrics: %v", err)
	}
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(metrics), "berth_releases") {
		t.Fatalf("scrape the controller's metrics: %s, %v:\n%.500s", resp.Status, err, metrics)
	}
	texts["the controller's logs"], texts["the controller's metrics"] = w.logs.String(), string(metrics)
	for what, text := range texts {
		for _, s := range secrets {
			if i := strings.Index(text, s); i >= 0 {
				t.Errorf("%s hold the secret %q: ...%s...", what, s, text[max(i-300, 0):min(i+100, len(text))])
			}
		}
	}
}

// failedWith says the Release is Ready=False, Stalled, with reason, for its generation.
func failedWith(reason string) func(*v1alpha1.Release) bool {
	return func(rel *v1alpha1.Release) bool {
		s := condition(rel, controller.ConditionStalled)
		return notReadyWith(reason)(rel) && s != nil && s.Status == metav1.ConditionTrue
	}
}

// warned waits until a Warning Event of reason regards the Release name, and returns its note.
func warned(t *testing.T, env *testenv.Env, name, reason string) string {
	t.Helper()
	var note string
	waitUntil(t, fmt.Sprintf("a %s Event regards Release %s", reason, name), func() bool {
		list, err := env.Client.EventsV1().Events(env.Namespace).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Release" && e.Regarding.Name == name && e.Type == "Warning" && e.Reason == reason {
				note = e.Note
				return true
			}
		}
		return false
	})
	return note
}

func TestReleaseSecretValuesNeverLeak(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	watch := runWatchedController(t, env, false)
	c := startClient(t, env)
	deployer(t, env, "deployer")
	suffix := fmt.Sprintf("%016x", rand.Uint64())
	canary := "Sup3r-S3cret-canary-" + suffix
	literal := canary + ",sec,ret=P4ss,x[{y}]"
	createSecret(t, env, "db", map[string][]byte{
		"password": []byte(canary),
		"literal":  []byte(literal),
		// Not YAML, and a YAML parser's messages quote it ("invalid map key: ...").
		"values.yaml": []byte("password: " + canary + "\n? [" + canary + "]\n: 1\n"),
	})
	repoURL := releasetest.ServeCharts(t, canaryCharts(t)...)
	password := v1alpha1.ValuesReference{Kind: "Secret", Name: "db", Key: "password", TargetPath: "password"}
	rels := []*v1alpha1.Release{
		canaryRelease(env.Namespace, "schema", repoURL, "schema", "", password),
		canaryRelease(env.Namespace, "required", repoURL, "tmpl", "", password),
		canaryRelease(env.Namespace, "fail", repoURL, "tmpl", `{"useFail": true}`, password),
		canaryRelease(env.Namespace, "hook", repoURL, "hook", "", password),
		canaryRelease(env.Namespace, "badyaml", repoURL, "settings", "", v1alpha1.ValuesReference{Kind: "Secret", Name: "db"}),
		canaryRelease(env.Namespace, "literal", repoURL, "settings", "",
			v1alpha1.ValuesReference{Kind: "Secret", Name: "db", Key: "literal", TargetPath: "password"}),
	}
	for _, rel := range rels {
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}

	// The schema's violation is named by path and rule, in the condition and the Event.
	got := waitFor(t, c, env.Namespace, "schema", "fails on the schema", failedWith(controller.ReasonInstallFailed))
	for what, msg := range map[string]string{
		"condition": condition(got, controller.ConditionReady).Message,
		"Event":     warned(t, env, "schema", controller.ReasonInstallFailed),
	} {
		if !strings.Contains(msg, "'/password': maxLength, pattern") {
			t.Errorf("the %s does not name the path and the rules: %s", what, msg)
		}
	}
	// A template's required or fail is named by the template's place.
	for name, place := range map[string]string{"required": "tmpl/templates/cm.yaml:8:", "fail": "tmpl/templates/cm.yaml:6:"} {
		got = waitFor(t, c, env.Namespace, name, "fails in the template", failedWith(controller.ReasonInstallFailed))
		if msg := condition(got, controller.ConditionReady).Message; !strings.Contains(msg, place) {
			t.Errorf("Release %s: the condition does not name %s: %s", name, place, msg)
		}
		if b := got.Status.Blockers; len(b) != 1 || b[0].Kind != "template" || !strings.HasPrefix(b[0].Object, place) {
			t.Errorf("Release %s: blockers %+v, want the template %s", name, b, place)
		}
		warned(t, env, name, controller.ReasonInstallFailed)
	}
	// The hook is named, its logs are not shown.
	got = waitFor(t, c, env.Namespace, "hook", "fails in its hook", failedWith(controller.ReasonHookFailed))
	if b := got.Status.Blockers; len(b) != 1 || b[0].Kind != "hook" || !strings.Contains(b[0].Object, "migrate") || b[0].LogTail != "" {
		t.Errorf("blockers %+v, want the hook Job migrate without its logs", b)
	}
	warned(t, env, "hook", controller.ReasonHookFailed)
	// The Secret's content is named by Secret, key and line.
	got = waitFor(t, c, env.Namespace, "badyaml", "refuses its values", failedWith(controller.ReasonInvalidValues))
	if msg := condition(got, controller.ConditionReady).Message; !strings.Contains(msg, "Secret/"+env.Namespace+"/db key values.yaml: not a values file") {
		t.Errorf("the condition does not name the Secret and its key: %s", msg)
	}
	// A targetPath's content arrives as it is.
	waitFor(t, c, env.Namespace, "literal", "is installed", readyAt(1))
	if cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "literal-config", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap literal-config: %v", err)
	} else if cm.Data["password"] != literal {
		t.Errorf("ConfigMap literal-config password = %q, want %q", cm.Data["password"], literal)
	}

	watch.assertNoSecret(t, env, c, canary, suffix)
	for _, rel := range rels {
		deleteRelease(t, c, rel)
	}
	watch.assertNoSecret(t, env, c, canary, suffix)
}

func TestReleaseShowsChartOutputOnlyWhenAllowed(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	watch := runWatchedController(t, env, true)
	c := startClient(t, env)
	deployer(t, env, "deployer")
	suffix := fmt.Sprintf("%016x", rand.Uint64())
	canary := "Sup3r-S3cret-canary-" + suffix
	createSecret(t, env, "db", map[string][]byte{"password": []byte(canary)})
	repoURL := releasetest.ServeCharts(t, canaryCharts(t)...)
	password := v1alpha1.ValuesReference{Kind: "Secret", Name: "db", Key: "password", TargetPath: "password"}
	hook := canaryRelease(env.Namespace, "hook", repoURL, "hook", "", password)
	fail := canaryRelease(env.Namespace, "fail", repoURL, "tmpl", `{"useFail": true}`, password)
	for _, rel := range []*v1alpha1.Release{hook, fail} {
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}

	got := waitFor(t, c, env.Namespace, "hook", "fails in its hook", failedWith(controller.ReasonHookFailed))
	if b := got.Status.Blockers; len(b) != 1 || !strings.Contains(b[0].LogTail, "password "+canary+" refused") {
		t.Errorf("blockers %+v, want the end of the hook's logs", b)
	}
	got = waitFor(t, c, env.Namespace, "fail", "fails in the template", failedWith(controller.ReasonInstallFailed))
	if b := got.Status.Blockers; len(b) != 1 || !strings.Contains(b[0].LogTail, "password "+canary+" is refused") {
		t.Errorf("blockers %+v, want the template's message", b)
	}
	warned(t, env, "hook", controller.ReasonHookFailed)
	warned(t, env, "fail", controller.ReasonInstallFailed)

	// logTail holds it; nothing else does.
	for _, name := range []string{"hook", "fail"} {
		var rel v1alpha1.Release
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: env.Namespace, Name: name}, &rel); err != nil {
			t.Fatal(err)
		}
		for i := range rel.Status.Blockers {
			rel.Status.Blockers[i].LogTail = ""
		}
		data, err := json.Marshal(rel)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), suffix) {
			t.Errorf("Release %s holds the secret outside status.blockers[].logTail: %s", name, data)
		}
	}
	if err := c.Delete(t.Context(), hook); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(t.Context(), fail); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the Releases are gone", func() bool {
		var list v1alpha1.ReleaseList
		return c.List(t.Context(), &list, client.InNamespace(env.Namespace)) == nil && len(list.Items) == 0
	})
	watch.assertNoSecret(t, env, c, canary, suffix)
}

func TestReleaseRefusesSchemaRefsItWouldFetch(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	var requests atomic.Int32
	schemas := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Write([]byte(`{"type": "string"}`))
	}))
	t.Cleanup(schemas.Close)
	refs := map[string]string{
		"web":  schemas.URL + "/password.json",
		"file": "file:///etc/hostname",
	}
	var charts []string
	for name, ref := range refs {
		charts = append(charts, berthtest.PackageNewChart(t, name, "0.1.0", map[string]string{
			"values.yaml":        "password: none\n",
			"values.schema.json": `{"type": "object", "properties": {"password": {"$ref": "` + ref + `"}}}`,
			"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {password: {{ .Values.password | quote }}}\n",
		}))
	}
	repoURL := releasetest.ServeCharts(t, charts...)
	for name, ref := range refs {
		rel := canaryRelease(env.Namespace, name, repoURL, name, "")
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
		got := waitFor(t, c, env.Namespace, name, "refuses the chart", failedWith(controller.ReasonInvalidChart))
		if msg := condition(got, controller.ConditionReady).Message; !strings.Contains(msg, "refers to "+ref) {
			t.Errorf("Release %s: the condition does not name %s: %s", name, ref, msg)
		}
		if len(got.Status.History) != 0 {
			t.Errorf("Release %s: history %+v, want no operation", name, got.Status.History)
		}
		deleteRelease(t, c, got)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the controller made %d requests for schemas", n)
	}
}
