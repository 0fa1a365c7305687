{{/* SPDX-License-Identifier: Apache-2.0 */}}
{{/*
The release's base name: the release name when it holds the chart's name ("warpscope"), else
release-chart. Objects are <fullname>-agent and <fullname>-server.
*/}}
{{- define "warpscope.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels a workload's selector uses. Call with (dict "ctx" . "component" "agent"). */}}
{{- define "warpscope.selectorLabels" -}}
app.kubernetes.io/name: {{ .ctx.Chart.Name }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- end -}}

{{/* Every object's labels. Call with (dict "ctx" . "component" "agent"). */}}
{{- define "warpscope.labels" -}}
{{ include "warpscope.selectorLabels" . }}
app.kubernetes.io/part-of: warpscope
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version }}
{{- end -}}

{{/* An image reference. Call with (dict "ctx" . "repository" .Values.image.agentRepository). */}}
{{- define "warpscope.image" -}}
{{ .repository }}:{{ .ctx.Values.image.tag | default .ctx.Chart.AppVersion }}
{{- end -}}

{{/* The URL the agents push to: this release's server, server.url, or none. */}}
{{- define "warpscope.serverURL" -}}
{{- if .Values.server.enabled -}}
http://{{ include "warpscope.fullname" . }}-server.{{ .Release.Namespace }}.svc:{{ .Values.server.port }}
{{- else -}}
{{- .Values.server.url -}}
{{- end -}}
{{- end -}}
