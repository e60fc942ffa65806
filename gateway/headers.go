package gateway

import (
	"net/http"
	"strings"
)

// securityHeaders puts on every answer what keeps a browser or a cache
// from doing more with it than a client reading JSON does: no cache keeps
// it (answers name principals and workflows), no browser sniffs a type
// into it, no referrer leaves with a link from it, and nothing runs in or
// frames it. The MCP endpoint, the OAuth metadata documents and the admin
// listener all serve them. They are set again when the answer's header is
// written, over what an inner handler set (the go-sdk sets its own
// Cache-Control); a "no-transform" it asked for, which keeps proxies from
// buffering an event stream, is kept. An event stream's Content-Type
// gains the charset its events are written in (UTF-8, the only one the
// format allows), so every text answer names its charset. An answer over
// TLS porthole serves itself carries Strict-Transport-Security, so a
// browser never tries the name over plain HTTP for a year; over plain HTTP
// (behind an ingress that terminates TLS, which sends its own) it would
// vouch for a connection porthole did not make, and is not sent.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hsts := r.TLS != nil
		setSecurityHeaders(w.Header(), hsts)
		next.ServeHTTP(&secureWriter{ResponseWriter: w, hsts: hsts}, r)
	})
}

// hstsValue is Strict-Transport-Security's: a year, and the names under
// porthole's.
const hstsValue = "max-age=31536000; includeSubDomains"

func setSecurityHeaders(h http.Header, hsts bool) {
	cc := "no-store"
	if strings.Contains(h.Get("Cache-Control"), "no-transform") {
		cc += ", no-transform"
	}
	h.Set("Cache-Control", cc)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; base-uri 'none'; frame-ancestors 'none'")
	if h.Get("Content-Type") == "text/event-stream" {
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
	}
	if hsts {
		h.Set("Strict-Transport-Security", hstsValue)
	}
}

// secureWriter sets the security headers once more as the header is
// written.
type secureWriter struct {
	http.ResponseWriter
	wrote, hsts bool
}

func (w *secureWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		setSecurityHeaders(w.Header(), w.hsts)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *secureWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *secureWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if !w.wrote {
			w.WriteHeader(http.StatusOK)
		}
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (w *secureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
