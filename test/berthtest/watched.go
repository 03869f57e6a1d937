package berthtest

import "strconv"

// WatchedChart is the files of a chart for watch windows: a Deployment of one replica named after
// the release, and a ConfigMap RELEASE-settings. With crash=true, its Pods crash-loop
// (CrashLoopBackOff, their restart count rising) run after they are Ready, as the local control
// plane simulates them, each container writing log; version changes the pod template, so that
// an upgrade rolls out new Pods.
func WatchedChart(log string) map[string]string {
	return map[string]string{
		"values.yaml": "version: 1\ncrash: false\nrun: 20s\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
      annotations:
        version: {{ .Values.version | quote }}
        {{- if .Values.crash }}
        devcluster.berth.dev/outcome: crashloop
        devcluster.berth.dev/run: {{ .Values.run | quote }}
        devcluster.berth.dev/log: ` + strconv.Quote(log) + `
        {{- end }}
    spec: {containers: [{name: app, image: example.invalid/app}]}
`,
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\ndata:\n  version: {{ .Values.version | quote }}\n",
	}
}
