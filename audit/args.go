package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
)

// Redactor replaces secrets in s and says how many it replaced. The gateway
// passes the wire redactor, so arguments are redacted with the same rules as
// responses.
type Redactor func(s string) (string, int)

// CallArgs are a call's arguments as its record holds them.
type CallArgs struct {
	Args []Arg
	// Omitted counts the arguments past MaxArgs, or past MaxArgsBytes of
	// names and values, which the record does not hold; OmittedSHA256 is
	// the hex SHA-256 of the JSON object of those arguments as the client
	// sent them (members in name order, each value compacted), redacted as
	// the record's values are, so that a reviewer holding the request can
	// show what was left out.
	Omitted       int
	OmittedSHA256 string
	// Redactions counts the secrets redacted in the arguments kept.
	Redactions int
}

// ArgsFromJSON turns a call's raw arguments into audit arguments, sorted by
// name: string values as they are, other values as compact JSON; each
// redacted and capped. Arguments that are not a JSON object are recorded as
// one argument named "" holding the raw text (capped), so nothing a client
// sent is lost from the record without a trace.
//
// Security: a record holds at most MaxArgs arguments and MaxArgsBytes of
// them; the rest is counted and hashed. One request of 111,828 arguments
// made a 4 MB record for one unit of rate limit.
func ArgsFromJSON(raw json.RawMessage, redact Redactor) CallArgs {
	if redact == nil {
		redact = func(s string) (string, int) { return s, 0 }
	}
	var obj map[string]json.RawMessage
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return CallArgs{Args: []Arg{}}
	}
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		v, n := redact(string(trimmed))
		return CallArgs{Args: []Arg{newArg("", v)}, Redactions: n}
	}
	names := slices.Sorted(maps.Keys(obj))
	out := CallArgs{Args: make([]Arg, 0, min(len(names), MaxArgs))}
	size := 0
	for i, name := range names {
		s := argText(obj[name])
		// The budget is judged on the capped sizes before redaction, which
		// are never smaller than capBytes' results: no argument is built twice.
		if len(out.Args) == MaxArgs || size+min(len(name), MaxToolBytes)+min(len(s), MaxArgBytes) > MaxArgsBytes {
			out.Omitted, out.OmittedSHA256 = len(names)-i, omittedDigest(obj, names[i:], redact)
			break
		}
		v, n := redact(s)
		out.Redactions += n
		a := newArg(name, v)
		size += len(a.Name) + len(a.Value)
		out.Args = append(out.Args, a)
	}
	return out
}

// argText is an argument's value as the record shows it: a string as it
// is, anything else as compact JSON.
func argText(v json.RawMessage) string {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s
	}
	var compact bytes.Buffer
	if json.Compact(&compact, v) == nil {
		return compact.String()
	}
	return string(v)
}

// omittedDigest is the hex SHA-256 of the JSON object of obj's members
// named in names (in name order, values compacted), as encoding/json
// writes it, redacted: a digest of a secret would let whoever reads the log
// test guesses of it.
func omittedDigest(obj map[string]json.RawMessage, names []string, redact Redactor) string {
	rest := make(map[string]json.RawMessage, len(names))
	for _, n := range names {
		rest[n] = obj[n]
	}
	b, _ := json.Marshal(rest)
	red, _ := redact(string(b))
	sum := sha256.Sum256([]byte(red))
	return hex.EncodeToString(sum[:])
}

func newArg(name, value string) Arg {
	a := Arg{Name: capBytes(name, MaxToolBytes), Value: capBytes(value, MaxArgBytes)}
	a.Truncated = len(value) > MaxArgBytes || len(name) > MaxToolBytes
	return a
}
