package e2e

import (
	"bufio"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// hookStarts lists the hooks in the order berth's progress says it started them, as
// "EVENT Kind/name" (the kind without its group).
func hookStarts(stderr, namespace string) []string {
	started := regexp.MustCompile(`^(\S+) hook (\S+): started$`)
	var out []string
	sc := bufio.NewScanner(strings.NewReader(stderr))
	for sc.Scan() {
		if m := started.FindStringSubmatch(sc.Text()); m != nil {
			kind, name, _ := strings.Cut(strings.Replace(m[2], namespace+"/", "", 1), "/")
			kind, _, _ = strings.Cut(kind, ".") // Helm's records name the kind without its group
			out = append(out, m[1]+" "+kind+"/"+name)
		}
	}
	return out
}

// orderChart has hooks of several kinds, names and weights, some on two events.
var orderChart = map[string]string{
	"templates/hooks.yaml": `
{{- define "hook" }}
metadata:
  name: {{ .name }}
  annotations:
    helm.sh/hook: {{ .events }}
    helm.sh/hook-weight: {{ .weight | quote }}
{{- end }}
{{- range list (dict "name" "b-job" "events" "pre-install" "weight" 1)
               (dict "name" "a-job" "events" "pre-upgrade,pre-install" "weight" 0)
               (dict "name" "c-job" "events" "post-install,post-upgrade" "weight" -1) }}
---
apiVersion: batch/v1
kind: Job
{{- include "hook" . }}
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {devcluster.berth.dev/run: 0s}}
    spec:
      restartPolicy: Never
      containers: [{name: hook, image: example.invalid/hook}]
{{- end }}
---
apiVersion: v1
kind: ConfigMap
{{- include "hook" (dict "name" "a-config" "events" "pre-install,pre-upgrade" "weight" 1) }}
---
apiVersion: v1
kind: Secret
{{- include "hook" (dict "name" "a-config" "events" "pre-install" "weight" 1) }}
---
apiVersion: v1
kind: ServiceAccount
{{- include "hook" (dict "name" "z-sa" "events" "pre-install,pre-upgrade" "weight" -5) }}
---
apiVersion: v1
kind: Pod
metadata:
  name: m-pod
  annotations:
    helm.sh/hook: pre-upgrade,pre-install
    devcluster.berth.dev/outcome: succeed
    devcluster.berth.dev/run: 0s
spec:
  restartPolicy: Never
  containers: [{name: hook, image: example.invalid/hook}]
---
apiVersion: v1
kind: ConfigMap
{{- include "hook" (dict "name" "n-config" "events" "post-install" "weight" 10) }}
---
apiVersion: v1
kind: ConfigMap
{{- include "hook" (dict "name" "a-config" "events" "post-upgrade" "weight" "-1") }}
`,
	"templates/app.yaml": `
apiVersion: v1
kind: ConfigMap
metadata: {name: app}
`,
}

// helmHookOrder is the order in which Helm v4 runs the hooks of the chart at dir for events: the
// hooks as releaseutil.SortManifests records them in the release, those of each event stably
// sorted by weight, then name (pkg/action/hooks.go, hookByWeight).
func helmHookOrder(t *testing.T, dir, namespace string, upgrade bool, events ...releasev1.HookEvent) []string {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := util.ToRenderValues(ch, map[string]any{}, common.ReleaseOptions{
		Name: "order", Namespace: namespace, Revision: 1, IsInstall: !upgrade, IsUpgrade: upgrade,
	}, common.DefaultCapabilities.Copy())
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		t.Fatal(err)
	}
	hooks, _, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, event := range events {
		var run []*releasev1.Hook
		for _, h := range hooks {
			if slices.Contains(h.Events, event) {
				run = append(run, h)
			}
		}
		sort.SliceStable(run, func(i, j int) bool {
			if run[i].Weight == run[j].Weight {
				return run[i].Name < run[j].Name
			}
			return run[i].Weight < run[j].Weight
		})
		for _, h := range run {
			out = append(out, fmt.Sprintf("%s %s/%s", event, h.Kind, h.Name))
		}
	}
	return out
}

func TestHookOrderMatchesHelm(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "order", orderChart)

	_, stderr := berthtest.MustBerth(t, env, "install", "order", chart)
	want := helmHookOrder(t, chart, env.Namespace, false, releasev1.HookPreInstall, releasev1.HookPostInstall)
	if got := hookStarts(stderr, env.Namespace); !slices.Equal(got, want) {
		t.Errorf("install ran hooks in this order:\n  %s\nHelm's order:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}

	_, stderr = berthtest.MustBerth(t, env, "upgrade", "order", chart)
	want = helmHookOrder(t, chart, env.Namespace, true, releasev1.HookPreUpgrade, releasev1.HookPostUpgrade)
	if got := hookStarts(stderr, env.Namespace); !slices.Equal(got, want) {
		t.Errorf("upgrade ran hooks in this order:\n  %s\nHelm's order:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for _, h := range berthtest.LastRecord(t, env, "order").Hooks {
		if h.LastRun.Phase != releasev1.HookPhaseSucceeded && slices.ContainsFunc(h.Events, func(e releasev1.HookEvent) bool {
			return e == releasev1.HookPreUpgrade || e == releasev1.HookPostUpgrade
		}) {
			t.Errorf("hook %s %s: last run recorded as %q, want Succeeded", h.Kind, h.Name, h.LastRun.Phase)
		}
	}
}

// testsChart has two tests: a Pod that succeeds and a Job whose outcome values set.
var testsChart = map[string]string{
	"values.yaml": "jobOutcome: succeed\n",
	"templates/app.yaml": `
apiVersion: v1
kind: ConfigMap
metadata: {name: app}
`,
	"templates/tests.yaml": `
apiVersion: v1
kind: Pod
metadata:
  name: pod-test
  annotations:
    helm.sh/hook: test
    devcluster.berth.dev/outcome: succeed
    devcluster.berth.dev/run: 0s
    devcluster.berth.dev/log: "GET /healthz 200"
spec:
  restartPolicy: Never
  containers: [{name: check, image: example.invalid/check}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: job-test
  annotations:
    helm.sh/hook: test
    helm.sh/hook-weight: "1"
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        devcluster.berth.dev/run: 0s
        devcluster.berth.dev/outcome: {{ .Values.jobOutcome }}
    spec:
      restartPolicy: Never
      containers: [{name: check, image: example.invalid/check}]
`,
}

func TestHookTestCommand(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "tested", testsChart)
	berthtest.MustBerth(t, env, "install", "tested", chart)

	stdout, _ := berthtest.MustBerth(t, env, "test", "tested", "--logs", "--filter", "name=pod-test")
	for _, want := range []string{"TEST SUITE:     pod-test", "Phase:          Succeeded", "POD LOGS: pod-test (check)", "GET /healthz 200"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("berth test output does not say %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "job-test") {
		t.Errorf("berth test --filter name=pod-test ran job-test:\n%s", stdout)
	}
	status, _ := berthtest.MustBerth(t, env, "status", "tested")
	if !strings.Contains(status, "TEST SUITE:     pod-test") {
		t.Errorf("berth status does not show the recorded test run:\n%s", status)
	}

	// A failing test: berth test fails naming it, and the record says so.
	berthtest.MustBerth(t, env, "upgrade", "tested", chart, "--set", "jobOutcome=fail")
	var stderr berthtest.LockedBuffer
	stdout, err := berthtest.BerthStreaming(t, env, &stderr, "test", "tested")
	if err == nil || !strings.Contains(err.Error(), "test hook Job.batch/"+env.Namespace+"/job-test failed") {
		t.Fatalf("berth test = %v, want an error naming the failed test\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout, "TEST SUITE:     job-test") {
		t.Errorf("berth test output does not list job-test:\n%s", stdout)
	}
	rel := berthtest.LastRecord(t, env, "tested")
	for name, want := range map[string]releasev1.HookPhase{"pod-test": releasev1.HookPhaseSucceeded, "job-test": releasev1.HookPhaseFailed} {
		if got := berthtest.RecordedHook(t, rel, name).LastRun.Phase; got != want {
			t.Errorf("test %s recorded as %q, want %q", name, got, want)
		}
	}
}
