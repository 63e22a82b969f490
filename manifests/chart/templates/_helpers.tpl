{{/* Outrigger's names are fixed: the controller and webhook look for them by these names. */}}

{{- define "outrigger.namespace" -}}
{{ .Release.Namespace }}
{{- end -}}

{{- define "outrigger.labels" -}}
app.kubernetes.io/name: outrigger
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "outrigger.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "outrigger.ha" -}}
{{- if eq .Values.profile "ha" }}true{{ end -}}
{{- end -}}

{{- define "outrigger.webhookReplicas" -}}
{{- if .Values.webhook.replicas }}{{ .Values.webhook.replicas }}{{ else if include "outrigger.ha" . }}3{{ else }}1{{ end -}}
{{- end -}}

{{- define "outrigger.controllerReplicas" -}}
{{- if .Values.controller.replicas }}{{ .Values.controller.replicas }}{{ else if include "outrigger.ha" . }}2{{ else }}1{{ end -}}
{{- end -}}

{{/* The restricted Pod Security Standard, for both containers. */}}
{{- define "outrigger.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "outrigger.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Namespaces no webhook entry ever matches. */}}
{{- define "outrigger.excludedNamespaces" -}}
{{- $list := list (include "outrigger.namespace" .) "kube-system" "kube-public" "kube-node-lease" -}}
{{- concat $list .Values.excludeNamespaces | uniq | toJson -}}
{{- end -}}

{{/* Values that must be one of a few: a typo fails the render instead of installing less. */}}
{{- define "outrigger.validate" -}}
{{- if not (has .Values.profile (list "default" "ha")) }}
{{- fail (printf "profile must be default or ha; got %q" .Values.profile) }}
{{- end }}
{{- if not (has .Values.certificates.mode (list "self-managed" "cert-manager" "external")) }}
{{- fail (printf "certificates.mode must be self-managed, cert-manager or external; got %q" .Values.certificates.mode) }}
{{- end }}
{{- if not (has .Values.admission.mode (list "webhook" "policy" "both")) }}
{{- fail (printf "admission.mode must be webhook, policy or both; got %q" .Values.admission.mode) }}
{{- end }}
{{- if and (ne .Values.admission.mode "webhook") (not (include "outrigger.policyApiVersion" .)) }}
{{- fail (printf "admission.mode=%s needs an API server that serves MutatingAdmissionPolicy: Kubernetes 1.36 or newer (admissionregistration.k8s.io/v1), or 1.34 and 1.35 started with --feature-gates=MutatingAdmissionPolicy=true and --runtime-config=admissionregistration.k8s.io/v1beta1=true; this one serves neither (helm template: pass --api-versions admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy)" .Values.admission.mode) }}
{{- end }}
{{- if not (has .Values.admission.failurePolicy (list "Fail" "Ignore")) }}
{{- fail (printf "admission.failurePolicy must be Fail or Ignore; got %q" .Values.admission.failurePolicy) }}
{{- end }}
{{- if lt (int .Values.controller.heapLimitMiB) 64 }}
{{- fail (printf "controller.heapLimitMiB must be a whole number of MiB, at least 64 and about half the memory limit (default 160); got %v" .Values.controller.heapLimitMiB) }}
{{- end }}
{{- with .Values.monitoring.podMonitor }}
{{- if not (regexMatch "^[0-9]+(ms|s|m|h)$" (toString .interval)) }}
{{- fail (printf "monitoring.podMonitor.interval must be a duration such as 30s or 1m; got %q" (toString .interval)) }}
{{- end }}
{{- if not (kindIs "map" .labels) }}
{{- fail (printf "monitoring.podMonitor.labels must be a map of labels, such as {release: kube-prometheus-stack}; got %q" (toString .labels)) }}
{{- end }}
{{- end }}
{{- if and (eq .Values.certificates.mode "external") (not .Values.certificates.caBundle) }}
{{- fail "certificates.mode=external needs certificates.caBundle: the CA (base64 PEM) that signed the certificate in Secret outrigger-webhook-tls" }}
{{- end }}
{{- end -}}

{{/* The API the admission policies are written in: the newest the server serves, or empty. */}}
{{- define "outrigger.policyApiVersion" -}}
{{- if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy" -}}
admissionregistration.k8s.io/v1
{{- else if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy" -}}
admissionregistration.k8s.io/v1beta1
{{- end -}}
{{- end -}}
