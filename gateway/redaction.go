package gateway

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// redactingWriter is the wire redactor for HTTP. An ordinary answer is held
// until its handler is done, so that the redactor sees the whole body before
// any byte leaves; bodies are small (stateless JSON answers of capped pages,
// or porthole's own short errors). An event stream (the legacy SSE
// transport) cannot be held: each event is redacted as it is written, which
// is whole because the go-sdk writes one event per Write.
type redactingWriter struct {
	http.ResponseWriter
	g         *Server
	status    int
	streaming bool
	body      *bytes.Buffer // from heldBodies, given back when written
}

// heldBodies are the buffers answers are held in until they are redacted
// and written, kept for the next answer (an answer of a megabyte held in
// a new buffer for each call was much of the collector's work).
var heldBodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxHeldBody is the largest buffer kept for reuse.
const maxHeldBody = 8 << 20

func (w *redactingWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		w.streaming = true
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *redactingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.streaming {
		if w.body == nil {
			w.body = heldBodies.Get().(*bytes.Buffer)
		}
		return w.body.Write(b)
	}
	if _, err := w.ResponseWriter.Write(w.g.redactEvent(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Flush passes on for a stream; an ordinary answer leaves only when it is
// redacted whole.
func (w *redactingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.streaming {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer (the SSE stream
// lifts its write deadline through it).
func (w *redactingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// redactEvent redacts one server-sent event: its data as JSON, anything
// else as text.
func (g *Server) redactEvent(p []byte) []byte {
	i := bytes.Index(p, []byte("data: "))
	if i < 0 {
		s, _ := g.redactor.String(string(p))
		return []byte(s)
	}
	data := bytes.TrimSuffix(p[i+len("data: "):], []byte("\n\n"))
	red, n := g.redactor.JSON(data)
	if n == 0 {
		return p
	}
	return append(append(append([]byte{}, p[:i+len("data: ")]...), red...), "\n\n"...)
}

// redactResponses is the last step before bytes leave for an HTTP client:
// every response body passes through the wire redactor, whatever wrote it
// (a tool result, an error from the go-sdk, porthole's own refusals).
func (g *Server) redactResponses(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &redactingWriter{ResponseWriter: w, g: g}
		next.ServeHTTP(rw, r)
		if rw.streaming {
			return
		}
		if rw.status == 0 {
			rw.status = http.StatusOK
		}
		var out []byte
		if rw.body != nil {
			defer func() {
				if rw.body.Cap() <= maxHeldBody {
					rw.body.Reset()
					heldBodies.Put(rw.body)
				}
			}()
			out = rw.body.Bytes()
		}
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
