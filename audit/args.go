package audit

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Redactor replaces secrets in s and says how many it replaced. The gateway
// passes the wire redactor, so arguments are redacted with the same rules as
// responses.
type Redactor func(s string) (string, int)

// ArgsFromJSON turns a call's raw arguments into audit arguments, sorted by
// name: string values as they are, other values as compact JSON; each
// redacted and capped. Arguments that are not a JSON object are recorded as
// one argument named "" holding the raw text, so nothing a client sent is
// lost from the record. It returns the number of redactions made.
func ArgsFromJSON(raw json.RawMessage, redact Redactor) ([]Arg, int) {
	if redact == nil {
		redact = func(s string) (string, int) { return s, 0 }
	}
	var obj map[string]json.RawMessage
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return []Arg{}, 0
	}
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		v, n := redact(string(trimmed))
		return []Arg{newArg("", v)}, n
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	slices.Sort(names)
	args := make([]Arg, 0, len(names))
	total := 0
	for _, name := range names {
		v := obj[name]
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			var compact bytes.Buffer
			if json.Compact(&compact, v) == nil {
				s = compact.String()
			} else {
				s = string(v)
			}
		}
		s, n := redact(s)
		total += n
		args = append(args, newArg(name, s))
	}
	return args, total
}

func newArg(name, value string) Arg {
	a := Arg{Name: capBytes(name, MaxToolBytes), Value: capBytes(value, MaxArgBytes)}
	a.Truncated = len(value) > MaxArgBytes || len(name) > MaxToolBytes
	return a
}
