package rpcdecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxDepth bounds nesting in a request body. MCP requests are shallow;
// deep nesting only costs the decoder.
const MaxDepth = 32

// Envelope is what strict decoding learned of a JSON-RPC request.
type Envelope struct {
	ID     json.RawMessage
	Method string
	Tool   string // for tools/call
	// Arguments are a tools/call's arguments as sent, absent when none.
	Arguments json.RawMessage
	// Plain says a tools/call's params hold "name" and at most
	// "arguments", keyed exactly so: nothing (no _meta, no
	// inputResponses) that only the go-sdk knows what to do with. Such a
	// call may be answered directly (the gateway answers such calls itself).
	Plain bool
	// Params are the request's params as sent, absent when none: a slice
	// of the body, for the few requests whose params a link reads further.
	Params json.RawMessage
}

// Error is a refusal of a body: a sentence for the client, and the JSON-RPC
// code to answer with.
type Error struct {
	Code    int
	Message string
	// A refusal that quotes a key of the body keeps the key whole, and the
	// sentence it goes into, for QuotingKeyWith.
	key, format string
}

func (e *Error) Error() string { return e.Message }

// QuotingKeyWith is the sentence with the key it quotes (if any) cut by
// cut instead of at MaxQuotedKey bytes. Security: the gateway cuts with its
// redactor (redact.Redactor.Cut), which redacts before it cuts; Message cuts
// first, and can leave the start of a secret the key held whole.
func (e *Error) QuotingKeyWith(cut func(string) string) string {
	if e.format == "" {
		return e.Message
	}
	return fmt.Sprintf(e.format, cut(e.key))
}

func refuse(code int, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Decode validates body and reads its envelope. The returned
// envelope carries the id when one could be read, for the error answer.
//
// It reads body once with strictScanner and allocates only the method and
// tool names: a well-formed request is read at the cost of one pass, while
// a hostile one is refused on the same terms as encoding/json would read it
// (FuzzDecodeAgreesWithReference keeps the two in step).
func Decode(body []byte) (Envelope, error) {
	s := strictScanner{b: body}
	if err := s.scan(); err != nil {
		return Envelope{}, err
	}
	return s.envelope()
}

// scan checks that the body is one JSON object by the strict grammar, and
// records where the request's members are.
func (s *strictScanner) scan() error {
	trimmed := bytes.TrimSpace(s.b)
	switch {
	case len(trimmed) == 0:
		return refuse(jsonrpc.CodeInvalidRequest, "the body is empty")
	case trimmed[0] == '[':
		return refuse(jsonrpc.CodeInvalidRequest, "batches are not accepted: send one request per HTTP request")
	case trimmed[0] != '{':
		return refuse(jsonrpc.CodeInvalidRequest, "the body must be one JSON-RPC request object")
	}
	s.space()
	if err := s.value(0, roleTop); err != nil {
		return err
	}
	if s.space(); s.i != len(s.b) {
		return refuse(jsonrpc.CodeInvalidRequest, "the body holds data after the request object")
	}
	return nil
}

// envelope reads the members a scan recorded and checks their types. The
// envelope it returns with an error carries the id, for the error answer.
//
// Whole: the request's members, checked one after another as JSON-RPC 2.0 states its rules.
func (s *strictScanner) envelope() (Envelope, error) {
	var env Envelope
	// Keys are exact here (the scan refused case variants), so a member
	// in another case is an unknown one.
	if s.unknown.end > 0 {
		return env, refuseKey("unknown member %q in a JSON-RPC request", s.decodeString(s.unknown))
	}
	env.ID = json.RawMessage(s.member(memberID))
	// An id that is not a string, null or a safe integer is never echoed,
	// whatever else the request is refused for: the answer's id is null,
	// as JSON-RPC says where a request's id cannot be read.
	idOK := ValidID(env.ID)
	if !idOK {
		env.ID = nil
	}
	version, method, params := s.member(memberJSONRPC), s.member(memberMethod), s.member(memberParams)
	switch {
	case len(version) == 0 || version[0] != '"' || s.decodeString(s.top[memberJSONRPC]) != "2.0":
		return env, refuse(jsonrpc.CodeInvalidRequest, `"jsonrpc" must be "2.0"`)
	case len(method) == 0 || method[0] != '"' || len(method) == 2:
		return env, refuse(jsonrpc.CodeInvalidRequest, `"method" must be a non-empty string (responses are not accepted)`)
	case !idOK:
		return env, refuse(jsonrpc.CodeInvalidRequest, BadID)
	}
	env.Method = s.decodeString(s.top[memberMethod])
	if len(params) > 0 && params[0] != '{' && string(params) != "null" {
		return env, refuse(jsonrpc.CodeInvalidRequest, `"params" must be an object`)
	}
	if len(params) > 0 {
		env.Params = json.RawMessage(params)
	}
	if env.Method == "tools/call" {
		if name := s.b[s.name.start:s.name.end]; len(name) == 0 || name[0] != '"' {
			return env, refuse(jsonrpc.CodeInvalidRequest, `tools/call needs "params" with a string "name"`)
		}
		env.Tool = s.decodeString(s.name)
		if s.args.end > 0 {
			env.Arguments = json.RawMessage(s.b[s.args.start:s.args.end])
		}
		env.Plain = !s.paramsOther
	}
	return env, nil
}

// BadID is the refusal of an id that is not a string, null, or an integer
// of at most 2^53-1 in magnitude.
const BadID = `"id" must be a string or an integer from -9007199254740991 to 9007199254740991`

// maxSafeID is the largest integer every JSON reader holds exactly (2^53-1).
const maxSafeID = 1<<53 - 1

// ValidID reports whether a scanned id is absent, a string, null, or an
// integer within maxSafeID: the scan has checked it is valid JSON, so its
// first byte tells a string from a number. Security: an id with a fraction
// or an exponent, or past 2^53, is read by the go-sdk (and by many
// clients) as another number, so its answer would go out under an id the
// client never sent (1.5 answered as 1).
func ValidID(id []byte) bool {
	if len(id) == 0 || id[0] == '"' || string(id) == "null" {
		return true
	}
	if id[0] != '-' && (id[0] < '0' || id[0] > '9') {
		return false
	}
	digits := id
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) > 16 { // 9007199254740991 has 16 digits; JSON allows no leading zeros
		return false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false // a fraction or an exponent
		}
		n = n*10 + int64(c-'0')
	}
	return n <= maxSafeID
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
// MaxDepth. It records where the request's members and the tool name
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

// MaxQuotedKey caps a key of the body quoted in a refusal: a refusal echoes
// what it refuses, not the whole of it (a 1 MB key made a 6 MB record).
const MaxQuotedKey = 256

// clientText is s cut at MaxQuotedKey bytes, on a character boundary, with
// "…" where it was cut.
func clientText(s string) string {
	if len(s) <= MaxQuotedKey {
		return s
	}
	cut := MaxQuotedKey
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// refuseKey refuses a request for a key of its body, which format quotes.
func refuseKey(format, key string) error {
	return &Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(format, clientText(key)), key: key, format: format}
}

// invalid is every refusal of a body that is not JSON.
func invalid() error { return refuse(jsonrpc.CodeParseError, "the body is not valid JSON") }

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
		if depth >= MaxDepth {
			return refuse(jsonrpc.CodeInvalidRequest, "the body nests deeper than %d levels", MaxDepth)
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

// object scans an object, refusing a key equal to another once unescaped
// and folded.
func (s *strictScanner) object(depth, role int) error {
	s.i++ // {
	var keys keySet
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
		if err := keys.add(s, key); err != nil {
			return err
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
		s.record(role, key, val)
		if more, err := s.next('}'); !more {
			return err
		}
	}
}

// keySet holds the keys of one object for the duplicate check. A handful
// of keys (every request has no more) are compared pairwise without
// allocating; past that they go into a map of folded keys, so that a body
// of many keys costs linear time.
type keySet struct {
	few  [16]span
	n    int
	many map[string]bool
}

func (k *keySet) add(s *strictScanner, key span) error {
	if k.many == nil && k.n < len(k.few) {
		for _, other := range k.few[:k.n] {
			if s.sameFolded(other, key) {
				return s.duplicate(key)
			}
		}
		k.few[k.n] = key
		k.n++
		return nil
	}
	if k.many == nil {
		k.many = make(map[string]bool, 2*len(k.few))
		for _, other := range k.few {
			k.many[foldKey(s.decodeString(other))] = true
		}
	}
	folded := foldKey(s.decodeString(key))
	if k.many[folded] {
		return s.duplicate(key)
	}
	k.many[folded] = true
	return nil
}

// record notes where the request's members, and the tool name and
// arguments of its params, are.
func (s *strictScanner) record(role int, key, val span) {
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
	return refuseKey("the key %q appears twice, or twice in different case", s.decodeString(key))
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
//
// Whole: the JSON number grammar, one state after another.
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
