package crash

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// hookEvents are the events the chart has a hook Job for.
var hookEvents = []string{"pre-install", "post-install", "pre-upgrade", "post-upgrade",
	"pre-rollback", "post-rollback", "pre-delete", "post-delete"}

// crashChart writes the chart of the suite: version 1 has a ConfigMap, a Deployment and a
// Service; version 2 (--set version=2) a Secret instead of the Service. Every hook event has a
// Job that runs for hookRun and is deleted before its next run and once it succeeded.
func crashChart(t testing.TB) string {
	t.Helper()
	var hooks strings.Builder
	for _, e := range hookEvents {
		fmt.Fprintf(&hooks, `---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-hook-%s
  annotations:
    helm.sh/hook: %s
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {devcluster.berth.dev/run: {{ .Values.hookRun | quote }}}}
    spec:
      restartPolicy: Never
      containers: [{name: hook, image: example.invalid/hook}]
`, e, e)
	}
	return berthtest.WriteChart(t, "crash", map[string]string{
		"values.yaml":          "version: 1\nhookRun: 200ms\n",
		"templates/hooks.yaml": hooks.String(),
		"templates/app.yaml": `
apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-config}
data: {version: {{ .Values.version | quote }}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-app}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec: {containers: [{name: app, image: example.invalid/app}]}
---
{{- if eq (int .Values.version) 1 }}
apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}-svc}
spec: {ports: [{port: 80}]}
{{- else }}
apiVersion: v1
kind: Secret
metadata: {name: {{ .Release.Name }}-secret}
stringData: {version: "2"}
{{- end }}
`,
	})
}

// content is what of the chart is in the cluster: "1" or "2" (its version), or "" for nothing.
type content string

// state checks that release name is consistent — no lease, no journal, no pending revision, the
// newest revision deployed with every object of its manifest and none of the other version, no
// hook Job left — and returns what of the chart is in the cluster. Problems are returned, not
// reported, so that a trial can say which kill left them.
func state(ctx context.Context, env *testenv.Env, name string) (content, []string) {
	var problems []string
	if _, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(ctx, release.LeaseKey(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		problems = append(problems, fmt.Sprintf("lease %s left (%v)", release.LeaseKey(name), err))
	}
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, release.JournalKey(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		problems = append(problems, fmt.Sprintf("journal %s left (%v)", release.JournalKey(name), err))
	}
	for _, e := range hookEvents {
		job := name + "-hook-" + e
		if _, err := env.Client.BatchV1().Jobs(env.Namespace).Get(ctx, job, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("hook Job %s left (%v)", job, err))
		}
	}
	exists := func(kind, obj string) bool {
		var err error
		switch kind {
		case "ConfigMap":
			_, err = env.Client.CoreV1().ConfigMaps(env.Namespace).Get(ctx, obj, metav1.GetOptions{})
		case "Deployment":
			_, err = env.Client.AppsV1().Deployments(env.Namespace).Get(ctx, obj, metav1.GetOptions{})
		case "Service":
			_, err = env.Client.CoreV1().Services(env.Namespace).Get(ctx, obj, metav1.GetOptions{})
		case "Secret":
			_, err = env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, obj, metav1.GetOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("%s %s: %v", kind, obj, err))
		}
		return err == nil
	}
	want := map[string]bool{} // by "Kind name", the objects of the deployed revision
	history, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).History(ctx, name)
	var got content
	switch {
	case err != nil:
		// Not recorded: nothing of the chart may be left.
	default:
		for _, rel := range history {
			if rel.Info.Status != release.StatusDeployed && rel.Info.Status != release.StatusSuperseded && rel.Info.Status != release.StatusFailed {
				problems = append(problems, fmt.Sprintf("revision %d is %s", rel.Version, rel.Info.Status))
			}
		}
		last := history[len(history)-1]
		if last.Info.Status != release.StatusDeployed {
			problems = append(problems, fmt.Sprintf("newest revision %d is %s, want deployed", last.Version, last.Info.Status))
		}
		got = content(fmt.Sprint(last.Config["version"]))
		if got == "<nil>" {
			got = "1"
		}
		want["ConfigMap "+name+"-config"], want["Deployment "+name+"-app"] = true, true
		if got == "1" {
			want["Service "+name+"-svc"] = true
		} else {
			want["Secret "+name+"-secret"] = true
		}
	}
	for _, obj := range []string{"ConfigMap " + name + "-config", "Deployment " + name + "-app", "Service " + name + "-svc", "Secret " + name + "-secret"} {
		kind, n, _ := strings.Cut(obj, " ")
		if live := exists(kind, n); live != want[obj] {
			problems = append(problems, fmt.Sprintf("%s exists: %v, want %v", obj, live, want[obj]))
		}
	}
	return got, problems
}
