{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "shop.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name used as the prefix of every object: the release name, with the chart name
appended unless the release name already contains it.
*/}}
{{- define "shop.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Chart name and version, as the helm.sh/chart label. */}}
{{- define "shop.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "shop.labels" -}}
helm.sh/chart: {{ include "shop.chart" . }}
{{ include "shop.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the shop's web Pods (and no hook Pod). */}}
{{- define "shop.selectorLabels" -}}
app.kubernetes.io/name: {{ include "shop.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Name of the ServiceAccount the shop runs as. */}}
{{- define "shop.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "shop.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
A hook Job. Call it with a dict:
  root      the chart's context (.)
  name      suffix of the Job's name, e.g. "migrate"
  hook      value of helm.sh/hook, e.g. "pre-install,pre-upgrade"
  weight    value of helm.sh/hook-weight
  policy    value of helm.sh/hook-delete-policy
  component value of the app.kubernetes.io/component label
  command   the shell command the hook runs
  withApp   true when the Job may use the release's ServiceAccount, ConfigMap and Secret
            (they do not exist yet before install, nor any more after delete)
*/}}
{{- define "shop.hookJob" -}}
{{- $root := .root -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "shop.fullname" $root }}-{{ .name }}
  labels:
    {{- include "shop.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
  annotations:
    helm.sh/hook: {{ .hook }}
    helm.sh/hook-weight: {{ .weight | quote }}
    helm.sh/hook-delete-policy: {{ .policy }}
spec:
  backoffLimit: {{ $root.Values.hooks.backoffLimit }}
  activeDeadlineSeconds: {{ $root.Values.hooks.activeDeadlineSeconds }}
  template:
    metadata:
      labels:
        {{- /* Not the selector labels: the shop's Service must not select hook Pods. */}}
        app.kubernetes.io/instance: {{ $root.Release.Name }}
        app.kubernetes.io/component: {{ .component }}
      annotations:
        devcluster.berth.dev/run: {{ $root.Values.hooks.runFor | quote }}
    spec:
      restartPolicy: Never
      {{- if .withApp }}
      serviceAccountName: {{ include "shop.serviceAccountName" $root }}
      {{- else }}
      automountServiceAccountToken: false
      {{- end }}
      containers:
        - name: {{ .name }}
          image: {{ $root.Values.hooks.image }}
          command: ["sh", "-c", {{ .command | quote }}]
          {{- if .withApp }}
          envFrom:
            - configMapRef:
                name: {{ include "shop.fullname" $root }}
            - secretRef:
                name: {{ include "shop.fullname" $root }}
          {{- else }}
          env:
            - name: DATABASE_HOST
              value: {{ $root.Values.database.host | quote }}
            - name: DATABASE_PORT
              value: {{ $root.Values.database.port | quote }}
            - name: DATABASE_NAME
              value: {{ $root.Values.database.name | quote }}
          {{- end }}
{{- end }}
