{{/* Names, labels and shared fragments of the webhook chart. */}}

{{- define "mldwh.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mldwh.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mldwh.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mldwh.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mldwh.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "mldwh.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mldiagnostics
app.kubernetes.io/component: injection-webhook
{{- end -}}

{{- define "mldwh.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "mldwh.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "mldwh.secretName" -}}
{{- printf "%s-tls" (include "mldwh.fullname" .) -}}
{{- end -}}

{{- define "mldwh.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The webhook configuration's name, checked to sort after the JobSet
     (jobset-mutating-webhook-configuration) and LWS
     (lws-mutating-webhook-configuration) ones. */}}
{{- define "mldwh.configurationName" -}}
{{- $name := required "webhook.configurationName is required" .Values.webhook.configurationName -}}
{{- if or (le $name "jobset-mutating-webhook-configuration") (le $name "lws-mutating-webhook-configuration") -}}
{{- fail (printf "webhook.configurationName %q must sort after lws-mutating-webhook-configuration: the API server calls mutating webhooks in name order" $name) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/* The four DNS names a client may use for the Service. */}}
{{- define "mldwh.dnsNames" -}}
{{- $svc := include "mldwh.fullname" . -}}
- {{ $svc }}
- {{ $svc }}.{{ .Release.Namespace }}
- {{ $svc }}.{{ .Release.Namespace }}.svc
- {{ $svc }}.{{ .Release.Namespace }}.svc.{{ .Values.kubernetesClusterDomain }}
{{- end -}}

{{/* The restricted Pod Security Standard, shared by the server and the
     certgen Job. */}}
{{- define "mldwh.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
# The kubelet gives Secret volume files this group (mode 0440): without it
# they stay root-owned and the non-root server cannot read its certificate.
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "mldwh.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}
