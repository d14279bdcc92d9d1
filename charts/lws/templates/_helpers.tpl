{{/* The chart's name, or nameOverride. */}}
{{- define "lws.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Prefix of every object name: "lws" for a release named lws, as upstream's kustomize prefix. */}}
{{- define "lws.fullname" -}}
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

{{- define "lws.selectorLabels" -}}
control-plane: controller-manager
app.kubernetes.io/name: {{ include "lws.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "lws.labels" -}}
app.kubernetes.io/name: {{ include "lws.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "lws.serviceAccountName" -}}
{{ include "lws.fullname" . }}-controller-manager
{{- end }}

{{- define "lws.subjects" -}}
- kind: ServiceAccount
  name: {{ include "lws.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}

{{- define "lws.schedulerProvider" -}}
{{- (.Values.gangSchedulingManagement | default dict).schedulerProvider | default "" -}}
{{- end }}

{{/* Said when image.manager.repository is left empty: no image is published yet (install/image.py). */}}
{{- define "lws.noPublishedImage" -}}
image.manager.repository is not set, and no lws-python image is published yet. Build one with hack/build-image.sh (or the Dockerfile), import it into each node's containerd (ctr -n k8s.io images import) or push it to a registry your nodes can pull from, and install with --set image.manager.repository=REPOSITORY,image.manager.tag=TAG (docs/install.md, "Image").
{{- end }}
