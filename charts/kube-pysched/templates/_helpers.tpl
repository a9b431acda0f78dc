{{- define "kube-pysched.fullname" -}}
{{- printf "%s" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kube-pysched.labels" -}}
app.kubernetes.io/name: kube-pysched
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "kube-pysched.selectorLabels" -}}
app.kubernetes.io/name: kube-pysched
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
