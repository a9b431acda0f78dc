{{/* The release's namespaced objects are named after the release. */}}
{{- define "kube-pysched.fullname" -}}
{{- printf "%s" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Cluster-scoped objects (ClusterRole, ClusterRoleBinding) are shared by every release, so
their name carries the release namespace and name. ":" cannot occur in either, so two
releases never get the same name (with "-" as separator, "a-b"/"c" and "a"/"b-c" would).
*/}}
{{- define "kube-pysched.clusterName" -}}
{{- printf "kube-pysched:%s:%s" .Release.Namespace .Release.Name -}}
{{- end -}}

{{/* The leader-election Lease (in the release namespace) and the one the Role grants. */}}
{{- define "kube-pysched.leaseName" -}}
{{- .Values.leaderElection.resourceName | default (include "kube-pysched.fullname" .) -}}
{{- end -}}

{{/* repository@digest when a digest is given, repository:tag otherwise. */}}
{{- define "kube-pysched.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{- define "kube-pysched.labels" -}}
app.kubernetes.io/name: kube-pysched
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "kube-pysched.selectorLabels" -}}
app.kubernetes.io/name: kube-pysched
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Values that the schema cannot relate to each other. */}}
{{- define "kube-pysched.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) -}}
{{- fail (printf "replicas=%d needs leaderElection.enabled=true: without it every replica schedules at once" (int .Values.replicas)) -}}
{{- end -}}
{{- end -}}

{{/* kube-pysched-controller (templates/controller.yaml): its own name label, so the
scheduler's selectors (Deployment, Service, PDB, NetworkPolicy) never match its pods. */}}
{{- define "kube-pysched.controllerName" -}}
{{- printf "%s-controller" (include "kube-pysched.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kube-pysched.controllerSelectorLabels" -}}
app.kubernetes.io/name: kube-pysched-controller
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kube-pysched.controllerLabels" -}}
{{ include "kube-pysched.controllerSelectorLabels" . }}
app.kubernetes.io/component: podgroup-controller
app.kubernetes.io/part-of: kube-pysched
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The controller's ClusterKopfPeering (cluster-scoped): "<namespace>.<release>-controller";
a namespace has no ".", so two releases never share one. */}}
{{- define "kube-pysched.controllerPeering" -}}
{{- .Values.controller.peeringName | default (printf "%s.%s" .Release.Namespace (include "kube-pysched.controllerName" .)) -}}
{{- end -}}
