package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/porthole-dev/porthole/audit"
)

// maxJSONDepth bounds nesting in a request body. MCP requests are shallow;
// deep nesting only costs the decoder.
const maxJSONDepth = 32

// envelope is what strict decoding learned of a JSON-RPC request.
type envelope struct {
	ID     json.RawMessage
	Method string
	Tool   string // for tools/call
	// Arguments are a tools/call's arguments as sent, absent when none.
	Arguments json.RawMessage
	// Plain says a tools/call's params hold "name" and at most
	// "arguments", keyed exactly so: nothing (no _meta, no
	// inputResponses) that only the go-sdk knows what to do with. Such a
	// call may be answered directly (see answerDirect).
	Plain bool
}

type envelopeKey struct{}

func envelopeFrom(r *http.Request) (envelope, bool) {
	e, ok := r.Context().Value(envelopeKey{}).(envelope)
	return e, ok
}

// errDecode is a refusal of a body, with the JSON-RPC code to answer with.
type errDecode struct {
	code    int
	message string
}

func (e *errDecode) Error() string { return e.message }

func refuseBody(code int, format string, args ...any) error {
	return &errDecode{code: code, message: fmt.Sprintf(format, args...)}
}

// strictDecode admits exactly one JSON-RPC request per body, and decides on
// the same bytes the MCP server will read. JSON decoders disagree on a key
// given twice (most take the last) and on keys in another case (Go's
// encoding/json, which porthole's handlers decode arguments with, matches
// them; the go-sdk's decoder does not), so {"name":"describe_workflow",
// "NAME":"x"} could mean one thing to a check and another to the server.
// Refusing duplicate and case-variant keys at every level makes the body
// mean one thing only; and the tool is read from "name" spelled exactly so,
// as the go-sdk reads it.
// Batches are refused (each call must pass the rate limiter and the audit
// log on its own), as are trailing data, a wrong Content-Type, and bodies
// over the cap (413: the cap bounds the memory one request can hold).
func (g *Server) strictDecode(maxBytes int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				g.denied(r, audit.OutcomeInvalid, http.StatusUnsupportedMediaType, "Content-Type is not application/json")
				writeRPCError(w, http.StatusUnsupportedMediaType, nil, jsonrpc.CodeInvalidRequest, "Content-Type must be application/json")
				return
			}
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				g.denied(r, audit.OutcomeInvalid, http.StatusRequestEntityTooLarge, "body over the size cap")
				writeRPCError(w, http.StatusRequestEntityTooLarge, nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("the body is larger than %d bytes", maxBytes))
				return
			}
			if err != nil {
				g.denied(r, audit.OutcomeInvalid, http.StatusBadRequest, "body could not be read")
				writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeParseError, "the body could not be read")
				return
			}
			env, err := decodeEnvelope(body)
			if err != nil {
				var d *errDecode
				errors.As(err, &d)
				g.denied(r, audit.OutcomeInvalid, http.StatusBadRequest, "invalid JSON-RPC: "+d.message)
				writeRPCError(w, http.StatusBadRequest, env.ID, d.code, d.message)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), envelopeKey{}, env)))
		})
	}
}

// decodeEnvelope validates body and reads its envelope. The returned
// envelope carries the id when one could be read, for the error answer.
//
// It reads body once with strictScanner and allocates only the method and
// tool names: a well-formed request is read at the cost of one pass, while
// a hostile one is refused on the same terms as encoding/json would read it
// (FuzzDecodeEnvelopeAgreesWithEncodingJSON keeps the two in step).
func decodeEnvelope(body []byte) (envelope, error) {
	var env envelope
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return env, refuseBody(jsonrpc.CodeInvalidRequest, "the body is empty")
	}
	if trimmed[0] == '[' {
		return env, refuseBody(jsonrpc.CodeInvalidRequest, "batches are not accepted: send one request per HTTP request")
	}
	if trimmed[0] != '{' {
		return env, refuseBody(jsonrpc.CodeInvalidRequest, "the body must be one JSON-RPC request object")
	}
	s := strictScanner{b: body}
	s.space()
	if err := s.value(0, roleTop); err != nil {
		return env, err
	}
	if s.space(); s.i != len(body) {
		return env, refuseBody(jsonrpc.CodeInvalidRequest, "the body holds data after the request object")
	}
	// Keys are exact here (the scan refused case variants), so a member
	// in another case is an unknown one.
	if s.unknown.end > 0 {
		return env, refuseBody(jsonrpc.CodeInvalidRequest, "unknown member %q in a JSON-RPC request", s.decodeString(s.unknown))
	}
	env.ID = json.RawMessage(s.member(memberID))
	version, method, params := s.member(memberJSONRPC), s.member(memberMethod), s.member(memberParams)
	switch {
	case len(version) == 0 || version[0] != '"' || s.decodeString(s.top[memberJSONRPC]) != "2.0":
		return env, refuseBody(jsonrpc.CodeInvalidRequest, `"jsonrpc" must be "2.0"`)
	case len(method) == 0 || method[0] != '"' || len(method) == 2:
		return env, refuseBody(jsonrpc.CodeInvalidRequest, `"method" must be a non-empty string (responses are not accepted)`)
	}
	if id := env.ID; len(id) > 0 && id[0] != '"' && (id[0] < '0' || id[0] > '9') && id[0] != '-' && string(id) != "null" {
		return env, refuseBody(jsonrpc.CodeInvalidRequest, `"id" must be a string or a number`)
	}
	env.Method = s.decodeString(s.top[memberMethod])
	if len(params) > 0 && params[0] != '{' && string(params) != "null" {
		return env, refuseBody(jsonrpc.CodeInvalidRequest, `"params" must be an object`)
	}
	if env.Method == "tools/call" {
		if name := s.b[s.name.start:s.name.end]; len(name) == 0 || name[0] != '"' {
			return env, refuseBody(jsonrpc.CodeInvalidRequest, `tools/call needs "params" with a string "name"`)
		}
		env.Tool = s.decodeString(s.name)
		if s.args.end > 0 {
			env.Arguments = json.RawMessage(s.b[s.args.start:s.args.end])
		}
		env.Plain = !s.paramsOther
	}
	return env, nil
}

// The members of a JSON-RPC request.
const (
	memberJSONRPC = iota
	memberID
	memberMethod
	memberParams
	memberCount
)

var memberNames = [memberCount]string{"jsonrpc", "id", "method", "params"}

// Roles of an object in a request: the request itself, its params (whose
// "name" names the tool of a tools/call), anything deeper.
const (
	roleOther = iota
	roleTop
	roleParams
)

// span is b[start:end] of a scanned body; the zero span is absent.
type span struct{ start, end int }

// strictScanner checks a body in one pass: one JSON value by the grammar
// encoding/json accepts, no object with two keys that are equal once
// unescaped and case-folded (as foldKey folds), nesting within
// maxJSONDepth. It records where the request's members and the tool name
// are, and the first unknown member.
type strictScanner struct {
	b       []byte
	i       int
	top     [memberCount]span
	name    span // the value of params' "name"
	unknown span // the first member of the request that is not one of memberNames
	args    span // the value of params' "arguments"
	// paramsOther says params hold a member other than "name" and
	// "arguments" (keys are exact: a key in another case is another key).
	paramsOther bool
}

func (s *strictScanner) member(m int) []byte { return s.b[s.top[m].start:s.top[m].end] }

// invalid is every refusal of a body that is not JSON.
func invalid() error { return refuseBody(jsonrpc.CodeParseError, "the body is not valid JSON") }

func (s *strictScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value at s.i, which is not white space.
func (s *strictScanner) value(depth, role int) error {
	if s.i >= len(s.b) {
		return invalid()
	}
	switch c := s.b[s.i]; {
	case c == '{' || c == '[':
		if depth >= maxJSONDepth {
			return refuseBody(jsonrpc.CodeInvalidRequest, "the body nests deeper than %d levels", maxJSONDepth)
		}
		if c == '{' {
			return s.object(depth, role)
		}
		return s.array(depth)
	case c == '"':
		return s.str()
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return invalid()
}

// object scans an object. Its keys are compared with each other folded;
// an object of more than a handful of keys (no request has one) keeps them
// in a map, so that a body of many keys costs linear time.
func (s *strictScanner) object(depth, role int) error {
	s.i++ // {
	var few [16]span
	keys := few[:0]
	var many map[string]bool
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return invalid()
		}
		key := span{start: s.i}
		if err := s.str(); err != nil {
			return err
		}
		key.end = s.i
		switch {
		case many != nil:
			folded := foldKey(s.decodeString(key))
			if many[folded] {
				return s.duplicate(key)
			}
			many[folded] = true
		case len(keys) == len(few):
			many = map[string]bool{}
			for _, k := range keys {
				many[foldKey(s.decodeString(k))] = true
			}
			folded := foldKey(s.decodeString(key))
			if many[folded] {
				return s.duplicate(key)
			}
			many[folded] = true
		default:
			for _, k := range keys {
				if s.sameFolded(k, key) {
					return s.duplicate(key)
				}
			}
			keys = append(keys, key)
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return invalid()
		}
		s.i++
		s.space()
		childRole, val := roleOther, span{start: s.i}
		if role == roleTop && s.isExactly(key, "params") {
			childRole = roleParams
		}
		if err := s.value(depth+1, childRole); err != nil {
			return err
		}
		val.end = s.i
		switch role {
		case roleTop:
			s.recordMember(key, val)
		case roleParams:
			switch {
			case s.isExactly(key, "name"):
				s.name = val
			case s.isExactly(key, "arguments"):
				s.args = val
			default:
				s.paramsOther = true
			}
		}
		if more, err := s.next('}'); !more {
			return err
		}
	}
}

func (s *strictScanner) recordMember(key, val span) {
	for m, name := range memberNames {
		if s.isExactly(key, name) {
			s.top[m] = val
			return
		}
	}
	if s.unknown.end == 0 {
		s.unknown = key
	}
}

func (s *strictScanner) duplicate(key span) error {
	return refuseBody(jsonrpc.CodeInvalidRequest, "the key %q appears twice, or twice in different case", s.decodeString(key))
}

func (s *strictScanner) array(depth int) error {
	s.i++ // [
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		if err := s.value(depth+1, roleOther); err != nil {
			return err
		}
		if more, err := s.next(']'); !more {
			return err
		}
	}
}

// next reads what follows a member or an element: a comma, after which
// more follow, or the closing byte.
func (s *strictScanner) next(closing byte) (more bool, err error) {
	s.space()
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case ',':
			s.i++
			s.space()
			return true, nil
		case closing:
			s.i++
			return false, nil
		}
	}
	return false, invalid()
}

// str scans a string literal: no control characters, only JSON's escapes.
// Bytes that are not UTF-8 are accepted, as encoding/json accepts them (it
// reads each as U+FFFD).
func (s *strictScanner) str() error {
	s.i++ // "
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return nil
		case c < 0x20:
			return invalid()
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return invalid()
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if hex4(s.b[s.i+2:]) < 0 {
					return invalid()
				}
				s.i += 6
			default:
				return invalid()
			}
		default:
			s.i++
		}
	}
	return invalid()
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *strictScanner) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && '1' <= s.b[s.i] && s.b[s.i] <= '9':
		s.digits()
	default:
		return invalid()
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return invalid()
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return invalid()
		}
	}
	return nil
}

func (s *strictScanner) digits() int {
	n := 0
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

func (s *strictScanner) literal(word string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return invalid()
	}
	s.i += len(word)
	return nil
}

// hex4 is the value of the four hex digits that b begins with, or -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// nextRune decodes the character of a scanned string literal at b[i] (not
// its closing quote) as encoding/json's unquoting does: an escape, a pair of
// \u escapes of a surrogate pair, a UTF-8 sequence, or U+FFFD for a byte
// that begins none or a lone surrogate. It returns the index after it.
func nextRune(b []byte, i int) (rune, int) {
	c := b[i]
	if c < utf8.RuneSelf && c != '\\' {
		return rune(c), i + 1
	}
	if c != '\\' {
		r, n := utf8.DecodeRune(b[i:])
		return r, i + n
	}
	switch b[i+1] {
	case 'b':
		return '\b', i + 2
	case 'f':
		return '\f', i + 2
	case 'n':
		return '\n', i + 2
	case 'r':
		return '\r', i + 2
	case 't':
		return '\t', i + 2
	case 'u':
		r := hex4(b[i+2:])
		i += 6
		if utf16.IsSurrogate(r) {
			if i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u' {
				if dec := utf16.DecodeRune(r, hex4(b[i+2:])); dec != unicode.ReplacementChar {
					return dec, i + 6
				}
			}
			return unicode.ReplacementChar, i
		}
		return r, i
	}
	return rune(b[i+1]), i + 2 // \" \\ \/
}

// foldRune is the least rune of r's Unicode simple-folding orbit, as
// foldKey folds each rune.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		// An ASCII letter's orbit holds its two cases and, for k and s,
		// a rune beyond ASCII (the Kelvin sign, the long s): the least is
		// the capital.
		if 'a' <= r && r <= 'z' {
			return r - ('a' - 'A')
		}
		return r
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// sameFolded reports whether two scanned keys are equal once unescaped and
// folded.
func (s *strictScanner) sameFolded(a, b span) bool {
	i, j := a.start+1, b.start+1
	for i < a.end-1 && j < b.end-1 {
		var ra, rb rune
		ra, i = nextRune(s.b, i)
		rb, j = nextRune(s.b, j)
		if foldRune(ra) != foldRune(rb) {
			return false
		}
	}
	return i == a.end-1 && j == b.end-1
}

// foldsTo reports whether a scanned key, unescaped and folded, equals word
// folded.
func (s *strictScanner) foldsTo(key span, word string) bool {
	i := key.start + 1
	for _, w := range word {
		if i >= key.end-1 {
			return false
		}
		var r rune
		r, i = nextRune(s.b, i)
		if foldRune(r) != foldRune(w) {
			return false
		}
	}
	return i == key.end-1
}

// isExactly reports whether a scanned key, unescaped, is word.
func (s *strictScanner) isExactly(key span, word string) bool {
	lit := s.b[key.start+1 : key.end-1]
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit) == word
	}
	return s.decodeString(key) == word
}

// decodeString is the text of a scanned string literal.
func (s *strictScanner) decodeString(lit span) string {
	raw := s.b[lit.start:lit.end]
	if len(raw) < 2 {
		return ""
	}
	if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var out string
	_ = json.Unmarshal(raw, &out)
	return out
}

// foldKey maps every rune of key to the smallest rune of its Unicode
// simple-folding orbit, so keys that Go's JSON decoding would match to the
// same field (K, k and the Kelvin sign among them) fold to one string.
func foldKey(key string) string {
	var b strings.Builder
	for _, r := range key {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// writeRPCError answers with a JSON-RPC error object and an HTTP status.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": message},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
