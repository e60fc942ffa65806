{{/*
Verifier keys as porthole writes them: name+hash+key, the name without
whitespace, + or a comma (a comma would split PORTHOLE_AUDIT_WITNESSES'
list), the hash 8 hex digits, the key 33 bytes in 44 base64 digits, the
first byte its algorithm, which the first two digits fix: a witness's
(porthole witness keygen) is cosignature/v1 (4: B, then A to P), a log's
(porthole audit note-key) Ed25519 (1: A, then Q to f). Each is refused
where the other is due, as porthole refuses it at start.
*/}}
{{- define "porthole.witnessKeyPattern" -}}
^[!-*\-.-~]+\+[0-9a-f]{8}\+B[A-P][A-Za-z0-9+/]{42}$
{{- end -}}
{{- define "porthole.logKeyPattern" -}}
^[!-*\-.-~]+\+[0-9a-f]{8}\+A[Q-Za-f][A-Za-z0-9+/]{42}$
{{- end -}}

{{/*
audit.witnesses, audit.witnessQuorum and audit.witnessMaxLag: what porthole
would refuse at start is refused here, with the value named.
*/}}
{{- define "porthole.checkWitnesses" -}}
{{- $a := .Values.audit -}}
{{- $ws := $a.witnesses | default list -}}
{{- if and $ws (not $a.origin) -}}
{{- fail "audit.witnesses needs audit.origin: witnesses cosign the checkpoints of a trail kept as a Merkle tree, which a replica keeps only under an origin" -}}
{{- end -}}
{{- $names := dict -}}
{{- range $i, $w := $ws -}}
{{- if not (kindIs "map" $w) -}}
{{- fail (printf "audit.witnesses[%d] is %v: each witness is a url and a verifierKey" $i $w) -}}
{{- end -}}
{{- $url := toString ($w.url | default "") -}}
{{- if not (regexMatch `^https?://[^\s,]+$` $url) -}}
{{- fail (printf "audit.witnesses[%d].url is %q: a witness's URL is http:// or https:// and holds no whitespace or comma" $i $url) -}}
{{- end -}}
{{- $key := toString ($w.verifierKey | default "") -}}
{{- if not (regexMatch (include "porthole.witnessKeyPattern" $) $key) -}}
{{- fail (printf "audit.witnesses[%d].verifierKey is %q: it must be the witness's cosignature/v1 verifier key, name+hash+key without whitespace, as porthole witness keygen writes it to its --verifier-key-file (a log's key from porthole audit note-key is another)" $i $key) -}}
{{- end -}}
{{- $name := regexFind "^[^+]+" $key -}}
{{- if hasKey $names $name -}}
{{- fail (printf "audit.witnesses names the witness %s twice: a witness counts once toward the quorum" $name) -}}
{{- end -}}
{{- $_ := set $names $name true -}}
{{- end -}}
{{- if and $ws (or (lt (int $a.witnessQuorum) 1) (gt (int $a.witnessQuorum) (len $ws))) -}}
{{- fail (printf "audit.witnessQuorum is %v: it must be between 1 and the %d witnesses of audit.witnesses" $a.witnessQuorum (len $ws)) -}}
{{- end -}}
{{- $lag := toString ($a.witnessMaxLag | default "") -}}
{{- if and $lag (not $ws) -}}
{{- fail "audit.witnessMaxLag needs audit.witnesses: it is how long the witnesses may fall behind before calls are refused" -}}
{{- end -}}
{{- if and $lag (not (regexMatch `^(0|(([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$` $lag)) -}}
{{- fail (printf "audit.witnessMaxLag is %q: it must be a Go duration such as 10m, or 0 (porthole refuses anything else at start)" $lag) -}}
{{- end -}}
{{- end -}}

{{/* PORTHOLE_AUDIT_WITNESSES: each witness's URL and verifier key, separated by commas. */}}
{{- define "porthole.witnessList" -}}
{{- $entries := list -}}
{{- range .Values.audit.witnesses -}}
{{- $entries = append $entries (printf "%s %s" .url .verifierKey) -}}
{{- end -}}
{{- join "," $entries -}}
{{- end -}}

{{/*
The chart's own witness (witness.enabled): a StatefulSet of its own whose
pods' labels differ from porthole's, so that porthole's Service, selector
and NetworkPolicy never take them.
*/}}
{{- define "porthole.witnessName" -}}{{ include "porthole.name" . }}-witness{{- end -}}
{{- define "porthole.witnessLabels" -}}
app.kubernetes.io/name: porthole-witness
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "porthole.witnessPort" -}}7380{{- end -}}

{{/*
witness.enabled needs the Secret of its key and a log key for each log; a
key porthole audit note-key did not print is refused, and, under
audit.origin, so is a list that lacks a replica's origin: the witness
would refuse that replica's checkpoints.
*/}}
{{- define "porthole.checkWitness" -}}
{{- $w := .Values.witness -}}
{{- if $w.enabled -}}
{{- if not $w.keySecret.name -}}
{{- fail "witness.enabled needs witness.keySecret.name: an existing Secret holding the witness's signer key (porthole witness keygen --private-key-file)" -}}
{{- end -}}
{{- if not $w.logKeys -}}
{{- fail "witness.enabled needs witness.logKeys: the note verifier key of each replica's checkpoints, which porthole audit note-key prints for each replica's origin; the witness cosigns no other log" -}}
{{- end -}}
{{- $origins := dict -}}
{{- range $i, $k := $w.logKeys -}}
{{- if not (regexMatch (include "porthole.logKeyPattern" $) (toString $k)) -}}
{{- fail (printf "witness.logKeys[%d] is %q: a log key is the note verifier key porthole audit note-key prints, name+hash+key without whitespace (a witness's cosignature/v1 key is another)" $i (toString $k)) -}}
{{- end -}}
{{- $_ := set $origins (regexFind "^[^+]+" (toString $k)) true -}}
{{- end -}}
{{- with .Values.audit.origin -}}
{{- range $n := until (int $.Values.replicaCount) -}}
{{- $origin := printf "%s/%s-%d" (toString $.Values.audit.origin) (include "porthole.name" $) $n -}}
{{- if not (hasKey $origins $origin) -}}
{{- fail (printf "witness.logKeys has no key for the origin %s, replica %d's: the witness would refuse its checkpoints; add what porthole audit note-key --public-key signing.pub --origin %s prints" $origin $n $origin) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
