package tokens

import (
	"net/http"
	"strings"
)

// Bearer returns the token of the single Authorization header when it
// reads exactly "Bearer " followed by a token of RFC 6750 characters. sent is
// false when no token was sent in that form.
func Bearer(h http.Header) (token string, sent bool) {
	values := h.Values("Authorization")
	if len(values) != 1 {
		return "", false
	}
	token, ok := strings.CutPrefix(values[0], "Bearer ")
	if !ok || token == "" {
		return "", false
	}
	for i := 0; i < len(token); i++ {
		if !isTokenChar(token[i]) {
			return "", false
		}
	}
	return token, true
}

// isTokenChar reports whether c may appear in an RFC 6750 b64token.
func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '='
}
