{{/* Names, labels and shared fragments of the operator chart. */}}

{{- define "mldop.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mldop.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mldop.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mldop.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mldop.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "mldop.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mldiagnostics
app.kubernetes.io/component: connection-operator
{{- end -}}

{{- define "mldop.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "mldop.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "mldop.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The port of a "--flag=[host]:port" in the controller args, else the
     binary's default; "0" when the listener is disabled.
     Call with (dict "args" LIST "flag" "metrics-bind-address" "default" "8080"). */}}
{{- define "mldop.argPort" -}}
{{- $port := .default -}}
{{- range .args -}}
{{- $arg := toString . -}}
{{- if or (hasPrefix (printf "--%s=" $.flag) $arg) (hasPrefix (printf "-%s=" $.flag) $arg) -}}
{{- $value := regexReplaceAll "^[^=]*=" $arg "" -}}
{{- $port = ternary "0" (regexReplaceAll "^.*:" $value "") (eq $value "0") -}}
{{- end -}}
{{- end -}}
{{- $port -}}
{{- end -}}

{{/* "true" when the controller args enable leader election, else "false",
     as mldiagnostics-operator's flag parser reads them: -leader-elect or
     --leader-elect, bare or =1|t|T|true|TRUE|True (=0, f, false, ... turn it
     off), the last occurrence winning. Call with the args list. */}}
{{- define "mldop.leaderElect" -}}
{{- $on := false -}}
{{- range . -}}
{{- $arg := toString . -}}
{{- if regexMatch "^--?leader-elect(=.*)?$" $arg -}}
{{- $value := ternary "true" (regexReplaceAll "^[^=]*=" $arg "") (not (contains "=" $arg)) -}}
{{- $on = has $value (list "1" "t" "T" "true" "TRUE" "True") -}}
{{- end -}}
{{- end -}}
{{- $on -}}
{{- end -}}
