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

{{/* The label that puts a Release in a shard. */}}
{{- define "berth-controller.shardKey" -}}
sharding.berth.dev/key
{{- end }}

{{/* sharding.shards as a JSON list of {name, replicas, concurrency, resources}: each shard is a
name, or a map with its name and what it sets apart from the chart's replicas, concurrency and
resources. A name must be a DNS label, listed once. */}}
{{- define "berth-controller.shards" -}}
{{- $out := list }}
{{- $seen := dict }}
{{- range (.Values.sharding).shards }}
{{- $s := ternary (dict "name" .) . (kindIs "string" .) }}
{{- $name := toString $s.name }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" $name) }}
{{- fail (printf "sharding.shards: %q is not a shard name: use a DNS label (lowercase letters, digits and '-', at most 63)" $name) }}
{{- end }}
{{- if hasKey $seen $name }}
{{- fail (printf "sharding.shards: %q is listed twice" $name) }}
{{- end }}
{{- $_ := set $seen $name true }}
{{- $out = append $out (dict "name" $name
  "replicas" (ternary $s.replicas $.Values.replicas (hasKey $s "replicas"))
  "concurrency" (ternary $s.concurrency $.Values.concurrency (hasKey $s "concurrency"))
  "resources" (ternary $s.resources $.Values.resources (hasKey $s "resources"))) }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* Labels that select the Pods of shard .shard (of release .root): apart from the main
controller's, which select no shard's. */}}
{{- define "berth-controller.shardSelectorLabels" -}}
app.kubernetes.io/name: {{ include "berth-controller.name" .root }}-shard
app.kubernetes.io/instance: {{ .root.Release.Name }}
berth.dev/shard: {{ .shard }}
{{- end }}

{{/* Labels that select the Pods of every shard. */}}
{{- define "berth-controller.shardsSelectorLabels" -}}
app.kubernetes.io/name: {{ include "berth-controller.name" . }}-shard
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The leader election Leases of the controllers: the command names a shard's
berth-controller-HASH.berth.dev, HASH the first 8 hex digits of its selector's SHA-256. */}}
{{- define "berth-controller.leaseNames" -}}
{{- $shards := include "berth-controller.shards" . | fromJsonArray }}
{{- if not $shards }}
{{- include "berth-controller.leaseName" . }}
{{- else }}
{{- $key := include "berth-controller.shardKey" . }}
{{- $names := list (printf "berth-controller-%s.berth.dev" (sha256sum (printf "!%s" $key) | trunc 8)) }}
{{- range $shards }}
{{- $names = append $names (printf "berth-controller-%s.berth.dev" (sha256sum (printf "%s=%s" $key .name) | trunc 8)) }}
{{- end }}
{{- join ", " $names }}
{{- end }}
{{- end }}

{{/*
The storage driver of the releases' records (storageDriver): secret or configmap. memory is
refused: the controller would forget every release when it restarts.
*/}}
{{- define "berth-controller.storageDriver" -}}
{{- $d := .Values.storageDriver | default "secret" -}}
{{- if not (has $d (list "secret" "configmap")) -}}
{{- fail (printf "storageDriver %q: use secret (the default) or configmap; memory would lose every record when the controller restarts" $d) -}}
{{- end -}}
{{- $d -}}
{{- end }}
