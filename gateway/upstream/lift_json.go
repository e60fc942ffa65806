package upstream

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// textSpans are where, in msg, the string literals of minLifted bytes or
// more at result.content[i].text lie (quotes included), and whether msg
// is a JSON-RPC response with id id, and no method or error member, whose
// shape the scan followed to its end, along keys written without escapes. The scan checks structure only as far as it needs to find its way:
// whatever else is wrong with msg stays in it, for the go-sdk to refuse.
func textSpans(msg, id []byte) ([][2]int, bool) {
	s := &jsonScan{b: msg}
	var spans [][2]int
	var got []byte
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "method", "error":
			return false // a request, a notification, an error: nothing to lift
		case "id":
			s.ws()
			start := s.i
			if !s.skip() {
				return false
			}
			got = msg[start:s.i]
			return true
		case "result":
			return s.object(func(key []byte) bool {
				if string(key) != "content" {
					return s.skip()
				}
				return s.array(func() bool {
					if s.at() != '{' {
						return s.skip()
					}
					return s.object(func(key []byte) bool {
						if string(key) != "text" || s.at() != '"' {
							return s.skip()
						}
						start := s.i
						if !s.str() {
							return false
						}
						if s.i-start >= minLifted {
							spans = append(spans, [2]int{start, s.i})
						}
						return true
					})
				})
			})
		}
		return s.skip()
	})
	s.ws()
	return spans, ok && s.i == len(msg) && bytes.Equal(got, id)
}

// jsonScan walks a JSON text by position, without decoding it.
type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// at is the next byte after white space, or 0 at the end.
func (s *jsonScan) at() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// str moves past the string literal at s.i.
func (s *jsonScan) str() bool {
	if s.at() != '"' {
		return false
	}
	start := s.i
	for j := s.i + 1; ; j++ {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return false
		}
		j += k
		odd := false
		for p := j - 1; p > start && s.b[p] == '\\'; p-- {
			odd = !odd
		}
		if !odd {
			s.i = j + 1
			return true
		}
	}
}

// skip moves past the value at s.i, whatever it is.
func (s *jsonScan) skip() bool {
	switch s.at() {
	case 0:
		return false
	case '"':
		return s.str()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.str() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	}
	start := s.i
	for s.i < len(s.b) && !strings.ContainsRune(",:}] \t\r\n{[\"", rune(s.b[s.i])) {
		s.i++
	}
	return s.i > start
}

// object walks the object at s.i, calling member at each member's value
// with its key as written (a key with escapes in it matches nothing).
func (s *jsonScan) object(member func(key []byte) bool) bool {
	if s.at() != '{' {
		return false
	}
	s.i++
	if s.at() == '}' {
		s.i++
		return true
	}
	for {
		s.ws()
		start := s.i
		if !s.str() {
			return false
		}
		key := s.b[start+1 : s.i-1]
		if bytes.IndexByte(key, '\\') >= 0 || s.at() != ':' {
			// A key written with escapes is one the scan cannot tell
			// from the keys it follows ("i\u0064" is "id"): it gives up.
			return false
		}
		s.i++
		if !member(key) {
			return false
		}
		switch s.at() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// array walks the array at s.i, calling element at each element.
func (s *jsonScan) array(element func() bool) bool {
	if s.at() != '[' {
		return false
	}
	s.i++
	if s.at() == ']' {
		s.i++
		return true
	}
	for {
		if !element() {
			return false
		}
		switch s.at() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// plainJSON[c] is whether c stands for itself in a JSON string literal.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// unquote decodes a JSON string literal as the go-sdk's decoder does:
// invalid UTF-8, and a surrogate half without its pair, become U+FFFD; a
// control character, a quote or a bad escape makes it no string at all.
func unquote(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", false
	}
	b := lit[1 : len(lit)-1]
	var out strings.Builder
	out.Grow(len(b))
	for i := 0; i < len(b); {
		j := i
		for j < len(b) && plainJSON[b[j]] {
			j++
		}
		out.Write(b[i:j])
		if i = j; i == len(b) {
			break
		}
		switch c := b[i]; {
		case c == '\\':
			n, ok := unescape(&out, b[i:])
			if !ok {
				return "", false
			}
			i += n
		case c < 0x80:
			return "", false // a control character, or a quote
		default:
			r, size := utf8.DecodeRune(b[i:])
			out.WriteRune(r) // utf8.RuneError for a byte that begins no rune
			i += size
		}
	}
	return out.String(), true
}

// unescape writes the escape that b begins with and returns its length.
//
// Whole: one case for each escape JSON has.
func unescape(out *strings.Builder, b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	switch b[1] {
	case '"', '\\', '/':
		out.WriteByte(b[1])
	case 'b':
		out.WriteByte('\b')
	case 'f':
		out.WriteByte('\f')
	case 'n':
		out.WriteByte('\n')
	case 'r':
		out.WriteByte('\r')
	case 't':
		out.WriteByte('\t')
	case 'u':
		r, ok := hex4(b[2:])
		if !ok {
			return 0, false
		}
		if utf16.IsSurrogate(r) {
			if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
				if r2, ok := hex4(b[8:]); ok {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						out.WriteRune(dec)
						return 12, true
					}
				}
			}
			r = utf8.RuneError
		}
		out.WriteRune(r)
		return 6, true
	default:
		return 0, false
	}
	return 2, true
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
