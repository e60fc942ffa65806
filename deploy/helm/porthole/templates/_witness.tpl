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
