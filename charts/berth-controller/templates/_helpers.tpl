{{/* The chart's name, at most 63 characters. */}}
{{- define "berth-controller.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the release's objects: the release name, with the chart's name when it
does not contain it. */}}
{{- define "berth-controller.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "berth-controller.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "berth-controller.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the controller's Pods. */}}
{{- define "berth-controller.selectorLabels" -}}
app.kubernetes.io/name: {{ include "berth-controller.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The controller's ServiceAccount. */}}
{{- define "berth-controller.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "berth-controller.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name must name an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The controller's image. */}}
{{- define "berth-controller.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The name of the leader election Lease: the controller's name, as the command sets it. */}}
{{- define "berth-controller.leaseName" -}}
berth-controller.berth.dev
{{- end }}
