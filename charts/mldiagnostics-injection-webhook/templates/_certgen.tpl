{{/* The certgen RBAC and pod, shared by the install/upgrade hook Job and the
     renewal CronJob. Call with (dict "root" $ "name" NAME "annotations" MAP). */}}

{{- define "mldwh.certgen.rbac" -}}
{{- $root := .root -}}
{{- $meta := dict "labels" (fromYaml (include "mldwh.labels" $root)) -}}
{{- if .annotations }}{{- $_ := set $meta "annotations" .annotations -}}{{- end -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .name }}
  namespace: {{ $root.Release.Namespace }}
  {{- toYaml $meta | nindent 2 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .name }}
  namespace: {{ $root.Release.Namespace }}
  {{- toYaml $meta | nindent 2 }}
rules:
  - apiGroups: [""]
    resources: [secrets]
    verbs: [create]
  - apiGroups: [""]
    resources: [secrets]
    resourceNames: [{{ include "mldwh.secretName" $root }}]
    verbs: [get, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .name }}
  namespace: {{ $root.Release.Namespace }}
  {{- toYaml $meta | nindent 2 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ .name }}
subjects:
  - kind: ServiceAccount
    name: {{ .name }}
    namespace: {{ $root.Release.Namespace }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .name }}
  {{- toYaml $meta | nindent 2 }}
rules:
  - apiGroups: [admissionregistration.k8s.io]
    resources: [mutatingwebhookconfigurations]
    resourceNames: [{{ include "mldwh.configurationName" $root }}]
    verbs: [get, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .name }}
  {{- toYaml $meta | nindent 2 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ .name }}
subjects:
  - kind: ServiceAccount
    name: {{ .name }}
    namespace: {{ $root.Release.Namespace }}
{{- end -}}

{{- define "mldwh.certgen.pod" -}}
{{- $root := .root -}}
metadata:
  labels:
    {{- /* not the server's selector labels: the PDB, Service and
           anti-affinity must never select a certgen pod */}}
    app.kubernetes.io/name: {{ include "mldwh.name" $root }}-certgen
    app.kubernetes.io/instance: {{ $root.Release.Name }}
    app.kubernetes.io/component: certgen
spec:
  serviceAccountName: {{ .name }}
  restartPolicy: OnFailure
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- include "mldwh.podSecurityContext" $root | nindent 4 }}
  {{- with $root.Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: certgen
      image: {{ include "mldwh.image" $root }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      args:
        - certgen
        - --service={{ include "mldwh.fullname" $root }}
        - --namespace={{ $root.Release.Namespace }}
        - --secret-name={{ include "mldwh.secretName" $root }}
        - --webhook-config={{ include "mldwh.configurationName" $root }}
      env:
        - name: KUBERNETES_CLUSTER_DOMAIN
          value: {{ $root.Values.kubernetesClusterDomain | quote }}
      resources:
        {{- toYaml $root.Values.certgen.resources | nindent 8 }}
      securityContext:
        {{- include "mldwh.containerSecurityContext" $root | nindent 8 }}
{{- end -}}
