package redact

import (
	"encoding/base64"
	"net/url"
	"strings"
)

// encodings are the spellings of an exact secret, other than the secret
// itself, that the redactor also looks for: upper- and lower-cased; URL-
// encoded as a query value and as a path segment (with upper- and
// lower-case hex digits); and base64 (standard and URL alphabets), where
// the secret may begin at any of the three byte positions of a base64
// group, so a secret encoded inside a longer text (Basic user:secret) is
// found too. Of each base64 writing only the characters that depend on the
// secret's bytes alone are kept. A secret spread over lines (a PEM key) has
// none: its lines are looked for as they are.
func encodings(secret string) []string {
	if strings.Contains(secret, "\n") {
		return nil
	}
	var out []string
	add := func(v string) {
		if len(v) >= MinExactSecretLen && v != secret {
			out = append(out, v)
		}
	}
	add(strings.ToUpper(secret))
	add(strings.ToLower(secret))
	for _, esc := range []string{url.QueryEscape(secret), url.PathEscape(secret)} {
		add(esc)
		add(lowerHexEscapes(esc))
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for k := 0; k < 3; k++ {
			add(base64Core(enc, secret, k))
		}
	}
	return out
}

// base64Core is the part of the base64 writing of k bytes followed by
// secret that depends on the secret's bytes alone: character j stands for
// bits 6j to 6j+6, and the secret holds bits 8k to 8(k+len).
func base64Core(enc *base64.Encoding, secret string, k int) string {
	full := enc.EncodeToString(append(make([]byte, k), secret...))
	from := (8*k + 5) / 6
	to := 8 * (k + len(secret)) / 6
	return full[from:to]
}

// lowerHexEscapes writes the hex digits of s's %XX escapes in lower case.
func lowerHexEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			for j := i + 1; j <= i+2; j++ {
				if 'A' <= b[j] && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
			i += 2
		}
	}
	return string(b)
}
