{{- define "porthole.name" -}}{{ .Release.Name }}-porthole{{- end -}}
{{- define "porthole.labels" -}}
app.kubernetes.io/name: porthole
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "porthole.check" -}}
{{- if and (not .Values.tokensSecret.name) (not .Values.dangerouslyServeWithoutAuthentication) -}}
{{- fail "porthole needs tokensSecret.name (an existing Secret holding the tokens file); set dangerouslyServeWithoutAuthentication: true only if anyone who reaches the port may read the namespace" -}}
{{- end -}}
{{- if not .Values.temporal.address -}}{{- fail "temporal.address is required" -}}{{- end -}}
{{- if not .Values.temporal.namespace -}}{{- fail "temporal.namespace is required" -}}{{- end -}}
{{- end -}}
