package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
)

// Redactor removes secrets from what a client sent; *redact.Redactor is
// one. The gateway passes the wire redactor, so arguments are redacted with
// the same rules as responses.
type Redactor interface {
	// String redacts all of s and says how many secrets it replaced.
	String(s string) (string, int)
	// Cut redacts s and cuts the result at n bytes, leaving no start of a
	// secret where it cut; it says how many secrets it replaced and
	// whether it cut.
	Cut(s string, n int) (out string, redactions int, cut bool)
}

// cutOnly is the Redactor of a nil one: it redacts nothing, and cuts.
type cutOnly struct{}

func (cutOnly) String(s string) (string, int) { return s, 0 }

func (cutOnly) Cut(s string, n int) (string, int, bool) { return capBytes(s, n), 0, len(s) > n }

// CallArgs are a call's arguments as its record holds them.
type CallArgs struct {
	Args []Arg
	// Omitted counts the arguments past MaxArgs, or past MaxArgsBytes of
	// names and values, which the record does not hold; OmittedSHA256 is
	// the hex SHA-256 of the JSON object of those arguments as the client
	// sent them (members in name order, each value compacted), redacted in
	// full, so that a reviewer holding the request can show what was left
	// out.
	Omitted       int
	OmittedSHA256 string
	// Redactions counts the secrets redacted in the arguments kept: in what
	// each name's and value's cut read (see Redactor.Cut).
	Redactions int
}

// ArgsFromJSON turns a call's raw arguments into audit arguments, sorted by
// name: string values as they are, other values as compact JSON; each name
// and value redacted and cut (Redactor.Cut). Arguments that are not a JSON
// object are recorded as one argument named "" holding the raw text, so
// nothing a client sent is lost from the record without a trace. A nil
// redact redacts nothing.
//
// Security: a record holds at most MaxArgs arguments and MaxArgsBytes of
// them as it writes them (quotedSize); the rest is counted and hashed. One request of 111,828 arguments
// made a 4 MB record for one unit of rate limit. And a value is cut by
// Cut, not redacted in full and then cut: a value of a megabyte costs the
// redaction of a window past its cap, and a cut never leaves the start of
// a secret that the value held only part of.
func ArgsFromJSON(raw json.RawMessage, redact Redactor) CallArgs {
	if redact == nil {
		redact = cutOnly{}
	}
	var obj map[string]json.RawMessage
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return CallArgs{Args: []Arg{}}
	}
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		a, n := newArg(redact, "", string(trimmed))
		return CallArgs{Args: []Arg{a}, Redactions: n}
	}
	names := slices.Sorted(maps.Keys(obj))
	out := CallArgs{Args: make([]Arg, 0, min(len(names), MaxArgs))}
	size := 0
	for i, name := range names {
		if len(out.Args) == MaxArgs {
			out.omit(obj, names[i:], redact)
			break
		}
		// The budget is judged on the argument as the record would hold
		// it (a marker can be longer than the secret it replaces): each
		// is built once, and the first that does not fit is the only one
		// built and left out.
		// Sizes are as the record writes them, quoted: a control
		// character costs five bytes there, not one.
		a, n := newArg(redact, name, argText(obj[name]))
		argSize := quotedSize(a.Name) + quotedSize(a.Value)
		if size+argSize > MaxArgsBytes {
			out.omit(obj, names[i:], redact)
			break
		}
		out.Redactions += n
		size += argSize
		out.Args = append(out.Args, a)
	}
	return out
}

// omit counts and hashes the arguments named in rest, which the record
// does not hold.
func (c *CallArgs) omit(obj map[string]json.RawMessage, rest []string, redact Redactor) {
	c.Omitted, c.OmittedSHA256 = len(rest), omittedDigest(obj, rest, redact)
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
// writes it, redacted in full: a digest of a secret would let whoever
// reads the log test guesses of it.
func omittedDigest(obj map[string]json.RawMessage, names []string, redact Redactor) string {
	rest := make(map[string]json.RawMessage, len(names))
	for _, n := range names {
		rest[n] = obj[n]
	}
	b, _ := json.Marshal(rest)
	red, _ := redact.String(string(b))
	sum := sha256.Sum256([]byte(red))
	return hex.EncodeToString(sum[:])
}

// newArg is an argument as its record holds it, and how many secrets were
// redacted in it. The name is redacted too: a client chose it, and a
// token sent as a key is a token all the same.
func newArg(redact Redactor, name, value string) (Arg, int) {
	n, nameRedactions, nameCut := redact.Cut(name, MaxToolBytes)
	v, valueRedactions, valueCut := redact.Cut(value, MaxArgBytes)
	return Arg{Name: n, Value: v, Truncated: nameCut || valueCut}, nameRedactions + valueRedactions
}
