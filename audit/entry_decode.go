package audit

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeEntry decodes a line into e as json.Unmarshal does, and fails
// where it fails.
//
// Verifying a trail spent most of its time in json.Unmarshal
// (docs/performance.md), so a line is first read by entryScanner, which
// knows only the form porthole's writer writes: no whitespace, every key
// one of Entry's, exactly as its tag spells it, and once; strings of the
// ASCII bytes 0x20 to 0x7F (DEL included, which JSON allows unescaped)
// and the escapes JSON has (a \u escape of a surrogate excepted);
// numbers of the type of their field; no null. A line of that form
// decodes to what json.Unmarshal makes of it. Anything else, every line
// that is not a record among it, is declined and decoded by
// json.Unmarshal, which decides: the scanner never refuses a line itself.
// FuzzEntryScannerAgreesWithUnmarshal holds it to that.
func decodeEntry(line []byte, e *Entry) error {
	if !libraryDecode {
		s := entryScanner{b: line}
		if s.entry(e) && s.i == len(line) {
			return nil
		}
		*e = Entry{}
	}
	return json.Unmarshal(line, e)
}

// libraryDecode routes every line through json.Unmarshal, for the tests
// that compare the two paths.
var libraryDecode bool

// entryScanner reads a line of the form decodeEntry describes; each of its
// methods reports false when what it reads is not of that form.
type entryScanner struct {
	b   []byte
	i   int
	buf []byte // a string being unescaped
}

// entryFields are Entry's members, by key; a member's index among them
// marks it seen.
var entryFields = func() map[string]entryField {
	fields := []struct {
		key  string
		read func(*entryScanner, *Entry) bool
	}{
		{"time", func(s *entryScanner, e *Entry) bool { return s.time(&e.Time) }},
		{"seq", func(s *entryScanner, e *Entry) bool { return s.uint(&e.Seq) }},
		{"prev", func(s *entryScanner, e *Entry) bool { return s.str(&e.Prev) }},
		{"v", func(s *entryScanner, e *Entry) bool { return s.int(&e.V) }},
		{"kid", func(s *entryScanner, e *Entry) bool { return s.str(&e.KeyID) }},
		{"kind", func(s *entryScanner, e *Entry) bool { return s.str((*string)(&e.Kind)) }},
		{"requestId", func(s *entryScanner, e *Entry) bool { return s.str(&e.RequestID) }},
		{"principal", func(s *entryScanner, e *Entry) bool { return s.str(&e.Principal) }},
		{"clientAddr", func(s *entryScanner, e *Entry) bool { return s.str(&e.ClientAddr) }},
		{"clientCert", func(s *entryScanner, e *Entry) bool { return s.str(&e.ClientCert) }},
		{"transport", func(s *entryScanner, e *Entry) bool { return s.str(&e.Transport) }},
		{"userAgent", func(s *entryScanner, e *Entry) bool { return s.str(&e.UserAgent) }},
		{"method", func(s *entryScanner, e *Entry) bool { return s.str(&e.Method) }},
		{"tool", func(s *entryScanner, e *Entry) bool { return s.str(&e.Tool) }},
		{"upstream", func(s *entryScanner, e *Entry) bool { return s.str(&e.Upstream) }},
		{"traceId", func(s *entryScanner, e *Entry) bool { return s.str(&e.TraceID) }},
		{"oauth", (*entryScanner).oauth},
		{"args", func(s *entryScanner, e *Entry) bool { return s.args(&e.Args) }},
		{"argsOmitted", func(s *entryScanner, e *Entry) bool { return s.int(&e.ArgsOmitted) }},
		{"argsOmittedSha256", func(s *entryScanner, e *Entry) bool { return s.str(&e.ArgsOmittedSHA256) }},
		{"outcome", func(s *entryScanner, e *Entry) bool { return s.str((*string)(&e.Outcome)) }},
		{"status", func(s *entryScanner, e *Entry) bool { return s.int(&e.Status) }},
		{"reason", func(s *entryScanner, e *Entry) bool { return s.str(&e.Reason) }},
		{"durationMs", func(s *entryScanner, e *Entry) bool { return s.float(&e.DurationMs) }},
		{"resultBytes", func(s *entryScanner, e *Entry) bool { return s.int(&e.ResultBytes) }},
		{"redactions", func(s *entryScanner, e *Entry) bool { return s.int(&e.Redactions) }},
		{"cached", func(s *entryScanner, e *Entry) bool { return s.bool(&e.Cached) }},
		{"profile", func(s *entryScanner, e *Entry) bool { return s.str(&e.Profile) }},
		{"opened", func(s *entryScanner, e *Entry) bool { return s.args(&e.Opened) }},
		{"count", func(s *entryScanner, e *Entry) bool { return s.int(&e.Count) }},
		{"first", func(s *entryScanner, e *Entry) bool { return s.time(&e.First) }},
		{"last", func(s *entryScanner, e *Entry) bool { return s.time(&e.Last) }},
		{"groups", (*entryScanner).groups},
		{"previousFile", func(s *entryScanner, e *Entry) bool { return s.str(&e.PreviousFile) }},
		{"previousLastSeq", func(s *entryScanner, e *Entry) bool { return s.uint(&e.PreviousLastSeq) }},
		{"chain", func(s *entryScanner, e *Entry) bool { return s.str(&e.Chain) }},
		{"missingFrom", func(s *entryScanner, e *Entry) bool { return s.uint(&e.MissingFrom) }},
		{"missingTo", func(s *entryScanner, e *Entry) bool { return s.uint(&e.MissingTo) }},
		{"checkpoint", func(s *entryScanner, e *Entry) bool { return s.checkpoint(&e.Checkpoint) }},
		{"pruned", func(s *entryScanner, e *Entry) bool { return s.checkpoint(&e.Pruned) }},
		{"tree", (*entryScanner).tree},
		{"mac", func(s *entryScanner, e *Entry) bool { return s.str(&e.MAC) }},
	}
	m := make(map[string]entryField, len(fields))
	for i, f := range fields {
		m[f.key] = entryField{i, f.read}
	}
	return m
}()

type entryField struct {
	index int
	read  func(*entryScanner, *Entry) bool
}

func (s *entryScanner) entry(e *Entry) bool {
	return s.object(func(key []byte) int {
		f, ok := entryFields[string(key)]
		if !ok || !f.read(s, e) {
			return -1
		}
		return f.index
	})
}

func (s *entryScanner) oauth(e *Entry) bool {
	e.OAuth = &struct {
		Issuer   string `json:"issuer"`
		Subject  string `json:"subject"`
		ClientID string `json:"clientId"`
		TokenID  string `json:"tokenId"`
	}{}
	o := e.OAuth
	return s.object(func(key []byte) int {
		return s.member(key, []string{"issuer", "subject", "clientId", "tokenId"}, func(i int) bool {
			return s.str([...]*string{&o.Issuer, &o.Subject, &o.ClientID, &o.TokenID}[i])
		})
	})
}

func (s *entryScanner) args(dst *[]EntryArg) bool {
	return scanArray(s, dst, func(a *EntryArg) bool {
		return s.object(func(key []byte) int {
			return s.member(key, []string{"name", "value", "truncated"}, func(i int) bool {
				switch i {
				case 0:
					return s.str(&a.Name)
				case 1:
					return s.str(&a.Value)
				}
				return s.bool(&a.Truncated)
			})
		})
	})
}

func (s *entryScanner) groups(e *Entry) bool {
	return scanArray(s, &e.Groups, func(g *struct {
		Count   int     `json:"count"`
		Outcome Outcome `json:"outcome"`
		Status  int     `json:"status"`
		Reason  string  `json:"reason"`
	}) bool {
		return s.object(func(key []byte) int {
			return s.member(key, []string{"count", "outcome", "status", "reason"}, func(i int) bool {
				switch i {
				case 0:
					return s.int(&g.Count)
				case 1:
					return s.str((*string)(&g.Outcome))
				case 2:
					return s.int(&g.Status)
				}
				return s.str(&g.Reason)
			})
		})
	})
}

func (s *entryScanner) tree(e *Entry) bool {
	t := &TreeEdge{}
	e.Tree = t
	return s.object(func(key []byte) int {
		return s.member(key, []string{"size", "edges"}, func(i int) bool {
			if i == 0 {
				return s.uint(&t.Size)
			}
			return scanArray(s, &t.Edges, s.str)
		})
	})
}

func (s *entryScanner) checkpoint(p **Checkpoint) bool {
	c := &Checkpoint{}
	*p = c
	return s.object(func(key []byte) int {
		return s.member(key, []string{"chain", "seq", "hash", "time", "kid", "sig", "note"}, func(i int) bool {
			switch i {
			case 1:
				return s.uint(&c.Seq)
			case 3:
				return s.time(&c.Time)
			}
			return s.str([...]*string{&c.Chain, nil, &c.Hash, nil, &c.KeyID, &c.Sig, &c.Note}[i])
		})
	})
}

// member reads the value of key, one of keys, with read(its index), and
// returns the index; -1 for another key or a value read refuses.
func (s *entryScanner) member(key []byte, keys []string, read func(i int) bool) int {
	for i, k := range keys {
		if string(key) == k {
			if !read(i) {
				return -1
			}
			return i
		}
	}
	return -1
}

// object reads an object; member reads the value of each key and returns
// the key's index among those it knows (below 64), or -1. A key seen twice
// is refused: json.Unmarshal merges the second value into the first.
func (s *entryScanner) object(member func(key []byte) int) bool {
	if !s.eat('{') {
		return false
	}
	if s.eat('}') {
		return true
	}
	var seen uint64
	for {
		key, ok := s.plain()
		if !ok || !s.eat(':') {
			return false
		}
		i := member(key)
		if i < 0 || seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		if s.eat('}') {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

// scanArray reads an array into *p, each element with elem; an empty one
// is an empty slice, not nil, as json.Unmarshal makes it.
func scanArray[T any](s *entryScanner, p *[]T, elem func(*T) bool) bool {
	if !s.eat('[') {
		return false
	}
	*p = []T{}
	if s.eat(']') {
		return true
	}
	for {
		*p = append(*p, *new(T))
		if !elem(&(*p)[len(*p)-1]) {
			return false
		}
		if s.eat(']') {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

func (s *entryScanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plain reads a string without escapes and returns what is between its
// quotes.
func (s *entryScanner) plain() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

func (s *entryScanner) str(p *string) bool {
	start := s.i
	if v, ok := s.plain(); ok {
		*p = string(v)
		return true
	}
	s.i = start
	return s.escaped(p)
}

// escaped reads a string with escapes.
func (s *entryScanner) escaped(p *string) bool {
	if !s.eat('"') {
		return false
	}
	s.buf = s.buf[:0]
	for s.i < len(s.b) {
		run := s.i
		for s.i < len(s.b) && s.b[s.i] >= 0x20 && s.b[s.i] < utf8.RuneSelf && s.b[s.i] != '"' && s.b[s.i] != '\\' {
			s.i++
		}
		s.buf = append(s.buf, s.b[run:s.i]...)
		switch {
		case s.eat('"'):
			*p = string(s.buf)
			return true
		case !s.eat('\\') || !s.escape():
			return false
		}
	}
	return false
}

// escape reads what follows a backslash into buf.
func (s *entryScanner) escape() bool {
	if s.i >= len(s.b) {
		return false
	}
	c := s.b[s.i]
	s.i++
	if r := unescaped(c); r != 0 {
		s.buf = append(s.buf, r)
		return true
	}
	if c != 'u' || s.i+4 > len(s.b) {
		return false
	}
	r, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 16)
	if err != nil || utf16.IsSurrogate(rune(r)) {
		return false // a surrogate (a pair, or none) is json.Unmarshal's to decode
	}
	s.i += 4
	s.buf = utf8.AppendRune(s.buf, rune(r))
	return true
}

// unescaped is the byte a one-letter escape stands for, or 0.
func unescaped(c byte) byte {
	switch c {
	case '"', '\\', '/':
		return c
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return 0
}

// number reads a number as JSON writes one.
func (s *entryScanner) number() ([]byte, bool) {
	start := s.i
	s.eat('-')
	if !s.eat('0') && !s.digits() {
		return nil, false
	}
	if s.eat('.') && !s.digits() {
		return nil, false
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		if !s.digits() {
			return nil, false
		}
	}
	return s.b[start:s.i], true
}

// digits reads one digit or more.
func (s *entryScanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// uint, int and float read a number as json.Unmarshal reads one into a
// field of their type.
func (s *entryScanner) uint(p *uint64) bool {
	n, ok := s.number()
	if !ok {
		return false
	}
	v, err := strconv.ParseUint(string(n), 10, 64)
	*p = v
	return err == nil
}

func (s *entryScanner) int(p *int) bool {
	n, ok := s.number()
	if !ok {
		return false
	}
	v, err := strconv.ParseInt(string(n), 10, strconv.IntSize)
	*p = int(v)
	return err == nil
}

func (s *entryScanner) float(p *float64) bool {
	n, ok := s.number()
	if !ok {
		return false
	}
	v, err := strconv.ParseFloat(string(n), 64)
	*p = v
	return err == nil
}

func (s *entryScanner) bool(p *bool) bool {
	for _, lit := range [...]string{"false", "true"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			*p = lit == "true"
			return true
		}
	}
	return false
}

// time reads a time as json.Unmarshal does: the string, quotes and all,
// given to time.Time's UnmarshalJSON.
func (s *entryScanner) time(p *time.Time) bool {
	start := s.i
	if _, ok := s.plain(); !ok {
		return false
	}
	return p.UnmarshalJSON(s.b[start:s.i]) == nil
}
