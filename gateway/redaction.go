package gateway

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
)

// redactingWriter holds a response until its handler is done, so that the
// redactor sees the whole body before any byte leaves. Bodies are small:
// stateless JSON responses of capped pages, or porthole's own short errors.
type redactingWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *redactingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *redactingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

// Flush is a no-op: nothing leaves before it is redacted.
func (w *redactingWriter) Flush() {}

// redactResponses is the last step before bytes leave for an HTTP client:
// every response body on the MCP route passes through the wire redactor,
// whatever wrote it (a tool result, an error from the go-sdk, porthole's own
// refusals).
func (g *Server) redactResponses(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &redactingWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		if rw.status == 0 {
			rw.status = http.StatusOK
		}
		out := rw.body.Bytes()
		if len(out) > 0 {
			if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
				out, _ = g.redactor.JSON(out)
			} else {
				s, _ := g.redactor.String(string(out))
				out = []byte(s)
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		}
		w.WriteHeader(rw.status)
		_, _ = w.Write(out)
	})
}
