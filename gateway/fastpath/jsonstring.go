package fastpath

import "unicode/utf8"

// htmlSafe[c] is whether json.Marshal writes the ASCII byte c in a string
// as it is: printable, not a quote or a backslash, and not '<', '>' or
// '&', which it escapes for HTML.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s as json.Marshal writes a string: quoted, with
// quotes, backslashes and control characters escaped, '<', '>' and '&'
// escaped for HTML, invalid UTF-8 as \ufffd, and U+2028 and U+2029
// escaped. It is encoding/json's own loop; what it saves is the rest of
// json.Marshal around a long string (reflection, a buffer grown by
// doubling, the copy out of it). TestAppendStringIsJSONMarshals and
// FuzzAppendStringIsJSONMarshals hold it to json.Marshal.
//
// Whole: one pass over the bytes, as encoding/json's.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
