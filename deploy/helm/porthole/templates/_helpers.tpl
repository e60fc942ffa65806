{{- define "porthole.name" -}}{{ .Release.Name }}-porthole{{- end -}}
{{- define "porthole.labels" -}}
app.kubernetes.io/name: porthole
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "porthole.check" -}}
{{- if and (not .Values.tokensSecret.name) (not .Values.oauth.issuers) (not .Values.dangerouslyServeWithoutAuthentication) -}}
{{- fail "porthole needs tokensSecret.name (an existing Secret holding the tokens file) or oauth.issuers; set dangerouslyServeWithoutAuthentication: true only if anyone who reaches the port may read the namespace" -}}
{{- end -}}
{{- if and .Values.oauth.issuers (not .Values.oauth.publicURL) -}}
{{- fail "oauth.issuers needs oauth.publicURL: the full URL clients reach porthole's MCP endpoint at, which tokens' aud must hold" -}}
{{- end -}}
{{- if and .Values.oauth.issuers .Values.oauth.introspection.url (or (not .Values.oauth.introspection.clientID) (not .Values.oauth.introspection.clientSecret.name)) -}}
{{- fail "oauth.introspection.url needs oauth.introspection.clientID and oauth.introspection.clientSecret.name" -}}
{{- end -}}
{{- if not .Values.temporal.address -}}{{- fail "temporal.address is required" -}}{{- end -}}
{{- if not .Values.temporal.namespace -}}{{- fail "temporal.namespace is required" -}}{{- end -}}
{{- if and (not .Values.adminTokensSecret.name) (not .Values.metricsDangerouslyWithoutToken) -}}
{{- fail "porthole needs adminTokensSecret.name (an existing Secret holding a tokens file from porthole token new) for /metrics, which names principals, tools and upstreams; set metricsDangerouslyWithoutToken: true only if nobody but Prometheus can reach the admin port" -}}
{{- end -}}
{{- include "porthole.checkAudit" . -}}
{{- include "porthole.checkWitness" . -}}
{{- end -}}

{{/*
The audit trail: a file on a volume of each replica's own, its keys from
Secrets, its checkpoint file on another volume. Each refusal says what is
lost.
*/}}
{{- define "porthole.checkAudit" -}}
{{- $a := .Values.audit -}}
{{- if and (not .Values.auditKeySecret.name) (not $a.dangerouslyWithoutKeys) -}}
{{- fail "porthole needs auditKeySecret.name (an existing Secret holding the audit HMAC key, 32+ bytes): without it each replica chains its audit trail with a random key that dies with the process, so nobody can verify the trail; set audit.dangerouslyWithoutKeys: true only if nobody will need to" -}}
{{- end -}}
{{- if and (not .Values.auditSigningKeySecret.name) (not $a.dangerouslyWithoutKeys) -}}
{{- fail "porthole needs auditSigningKeySecret.name (an existing Secret holding the checkpoint signing key from porthole audit keygen): without it no checkpoint is signed, so nothing proves an audit trail complete or shows that its end was cut; set audit.dangerouslyWithoutKeys: true only if nobody will need to" -}}
{{- end -}}
{{- if not (has $a.fsync (list "always" "interval")) -}}
{{- fail (printf "audit.fsync is %q: it must be always or interval (porthole refuses anything else at start)" (toString $a.fsync)) -}}
{{- end -}}
{{- if not (has $a.storage (list "persistentVolumeClaim" "emptyDir")) -}}
{{- fail (printf "audit.storage is %q: it must be persistentVolumeClaim or emptyDir" (toString $a.storage)) -}}
{{- end -}}
{{- if and (eq $a.storage "emptyDir") (not $a.shippedElsewhere) -}}
{{- fail "audit.storage: emptyDir keeps each replica's audit trail only as long as its pod, and a deleted or evicted pod takes it along: set audit.shippedElsewhere: true only when a shipper copies the trail off the pod (audit.shipper, or your own), or keep audit.storage: persistentVolumeClaim" -}}
{{- end -}}
{{- if and $a.maxAge (not .Values.auditSigningKeySecret.name) -}}
{{- fail "audit.maxAge needs auditSigningKeySecret.name: what remains after pruning verifies only from a signed pruned record" -}}
{{- end -}}
{{- with $a.origin -}}
{{- include "porthole.checkOrigin" $ -}}
{{- end -}}
{{- include "porthole.checkWitnesses" . -}}
{{- if and $a.shipper.enabled (or (not $a.shipper.image) (not $a.shipper.configMap)) -}}
{{- fail "audit.shipper.enabled needs audit.shipper.image and audit.shipper.configMap (an existing ConfigMap holding the shipper's configuration)" -}}
{{- end -}}
{{- if not (has (toString .Values.redis.failure) (list "closed" "local")) -}}
{{- fail (printf "redis.failure is %q: it must be closed (refuse calls while Redis does not answer) or local (each replica limits alone at 1/replicaCount)" (toString .Values.redis.failure)) -}}
{{- end -}}
{{- range $name := list "PORTHOLE_REDIS_URL" "PORTHOLE_REDIS_URL_FILE" "PORTHOLE_REPLICAS" -}}
{{- if hasKey $.Values.env $name -}}
{{- fail (printf "env.%s is set: give the Redis URL as redis.urlSecret (a Secret, never a value in Helm), and the chart sets PORTHOLE_REPLICAS from replicaCount" $name) -}}
{{- end -}}
{{- end -}}
{{- range $name := include "porthole.auditEnvNames" . | splitList " " -}}
{{- if hasKey $.Values.env $name -}}
{{- fail (printf "env.%s is set, but the chart sets %s for the audit trail or the admin listener's token (a value from env would override it, and could put the audit records back in the operations log or open /metrics and the profiler): use auditKeySecret, auditSigningKeySecret, audit and adminTokensSecret instead" $name $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
audit.origin: each replica's PORTHOLE_AUDIT_ORIGIN is it and the pod's name.
What porthole would refuse at start is refused here, and so is an origin
on emptyDirs, which a re-created pod would start again from nothing.
*/}}
{{- define "porthole.checkOrigin" -}}
{{- $a := .Values.audit -}}
{{- $origin := toString $a.origin -}}
{{- if not .Values.auditSigningKeySecret.name -}}
{{- fail "audit.origin needs auditSigningKeySecret.name: each checkpoint's note is signed under the origin" -}}
{{- end -}}
{{- if not (regexMatch "^[!-*,-~]+$" $origin) -}}
{{- fail (printf "audit.origin is %q: an origin is printable ASCII without whitespace or + (porthole refuses anything else at start)" $origin) -}}
{{- end -}}
{{- $podName := printf "%s-%d" (include "porthole.name" .) (sub (max (int .Values.replicaCount) 1) 1) -}}
{{- if gt (add (len $origin) 1 (len $podName)) 255 -}}
{{- fail (printf "audit.origin is %d bytes: with a slash and the pod's name (%s) it is past the 255 bytes porthole takes" (len $origin) $podName) -}}
{{- end -}}
{{- if ne $a.storage "persistentVolumeClaim" -}}
{{- fail "audit.origin needs audit.storage: persistentVolumeClaim: on an emptyDir a trail is lost with its pod, and the pod made again under its name would start a new trail under the same origin, a fork" -}}
{{- end -}}
{{- end -}}

{{/* The variables the chart owns for the audit trail and the admin listener's token. */}}
{{- define "porthole.auditEnvNames" -}}
PORTHOLE_AUDIT_LOG PORTHOLE_AUDIT_KEY_FILE PORTHOLE_AUDIT_SIGNING_KEY_FILE PORTHOLE_AUDIT_CHECKPOINT_FILE PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME PORTHOLE_AUDIT_MAX_BYTES PORTHOLE_AUDIT_FSYNC PORTHOLE_AUDIT_MAX_AGE PORTHOLE_AUDIT_ORIGIN PORTHOLE_AUDIT_WITNESSES PORTHOLE_AUDIT_WITNESS_QUORUM PORTHOLE_AUDIT_WITNESS_MAX_LAG PORTHOLE_ADMIN_TOKENS_FILE PORTHOLE_ADMIN_PPROF
{{- end -}}

{{/* Where the audit volumes are mounted in the pod. */}}
{{- define "porthole.auditLogDir" -}}/var/log/porthole{{- end -}}
{{/*
The checkpoint file's directory keeps the path of the audit-witness claim
it is on (see porthole.checkpointsVolume).
*/}}
{{- define "porthole.checkpointDir" -}}/var/lib/porthole/witness{{- end -}}
{{- define "porthole.shipperStateDir" -}}/var/lib/audit-shipper{{- end -}}

{{/*
porthole.checkpointsVolume is audit.checkpoints as YAML, each key set under
audit.witness (its deprecated name) taken before audit.checkpoints' own.
The volume itself, a claim template or an emptyDir, is named audit-witness:
a StatefulSet's volumeClaimTemplates cannot be changed, so a new name would
make every upgrade of a release with claims fail.
*/}}
{{- define "porthole.checkpointsVolume" -}}
{{- $a := .Values.audit -}}
{{- toYaml (merge (dict) (deepCopy ($a.witness | default dict)) (deepCopy ($a.checkpoints | default dict))) -}}
{{- end -}}

{{/*
The security context of every pod: non-root as the image's user, whose
group owns the volumes, and seccomp RuntimeDefault. fsGroupChangePolicy
changes ownership and modes only when a volume's root does not match, not
on every mount of a grown trail.
*/}}
{{- define "porthole.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The locked-down security context of every container. */}}
{{- define "porthole.containerSecurityContext" -}}
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* A claim template of each replica's own. Arguments: name, size, storageClassName, labels. */}}
{{- define "porthole.claimTemplate" -}}
- metadata:
    name: {{ .name }}
    labels: {{- .labels | nindent 6 }}
  spec:
    accessModes: ["ReadWriteOnce"]
    {{- with .storageClassName }}
    storageClassName: {{ . | quote }}
    {{- end }}
    resources:
      requests:
        storage: {{ .size | quote }}
{{- end -}}

{{/*
porthole.image is the image porthole runs: repository@digest, the index a
release signed; by tag only with image.allowTag, since a tag can be moved.
*/}}
{{- define "porthole.image" -}}
{{- $i := .Values.image -}}
{{- if $i.digest -}}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" (toString $i.digest)) -}}
{{- fail (printf "image.digest is %q: it must be sha256: and 64 hex digits, the release's image index" (toString $i.digest)) -}}
{{- end -}}
{{ $i.repository }}@{{ $i.digest }}
{{- else if $i.allowTag -}}
{{ $i.repository }}:{{ $i.tag | default .Chart.AppVersion }}
{{- else -}}
{{- fail "image.digest is empty: the chart runs porthole by the digest of the image a release signed (make release sets it; SECURITY.md, Verifying a release). Set image.allowTag: true to run image.tag deliberately" -}}
{{- end -}}
{{- end -}}

{{/*
porthole.pinned is an image reference given whole (list ref allowTag
valuesPath): it must name a digest (@sha256:) unless allowTag says a tag is
deliberate.
*/}}
{{- define "porthole.pinned" -}}
{{- $ref := toString (index . 0) -}}
{{- if not (or (index . 1) (regexMatch "@sha256:[0-9a-f]{64}$" $ref)) -}}
{{- fail (printf "%s.image is %q: name it by digest (repository@sha256:...), or set %s.allowTag: true to take a tag deliberately" (index . 2) $ref (index . 2)) -}}
{{- end -}}
{{ $ref }}
{{- end -}}
