package gateway

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/porthole-dev/porthole/gateway/fastpath"
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
	writes    int
	// text and structured are where, in a body written in one Write, the
	// fast path wrote an answer's structured content and the text block
	// that is the same JSON as a string (fastpath.Calls.Copied); zero for
	// any other body.
	text, structured fastpath.Span
}

type redactingWriterKey struct{}

// noteCopied tells r's redactingWriter where its answer's two copies are.
func noteCopied(r *http.Request, text, structured fastpath.Span) {
	if w, ok := r.Context().Value(redactingWriterKey{}).(*redactingWriter); ok {
		w.text, w.structured = text, structured
	}
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
		w.writes++
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
		next.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), redactingWriterKey{}, rw)))
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
				out = g.redactJSONBody(rw, out)
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

// redactJSONBody is the wire redaction of a JSON body. An answer the fast
// path wrote holds its structured content twice, once as the text block's
// string, which is the structured content with its quotes and backslashes
// escaped. The redactor reads a string literal by decoding it: the text
// block decodes to the structured content's very bytes, which it then
// reads as text and as JSON. Where those bytes hold nothing the fast path
// would look closer at, neither reading finds anything, and the escaped
// copy holds nothing more (escaping adds a backslash before a quote or a
// backslash, which begins no hint, and keeps every \u and \/). So when
// the envelope and the structured content hold nothing to redact, the
// text block is not read again: the body is as redaction would leave it.
// Otherwise, and for every other body, the whole is redacted.
// TestTheWireSkipsOnlyACopyOfWhatItReads and its fuzz target hold this to
// the bytes redacting the whole gives.
//
// (The structured content's own rendering was redacted already, but not
// as text: the text block, read as text, can hold what its literals do
// not, such as an escape's letter beginning a URL's scheme, so the
// structured content is read here too.)
func (g *Server) redactJSONBody(rw *redactingWriter, out []byte) []byte {
	t, s := rw.text, rw.structured
	if rw.writes == 1 && 0 < t.Start && t.Start < t.End && t.End <= s.Start && s.Start < s.End && s.End <= len(out) &&
		!g.redactor.MayHold(out[:t.Start]) && !g.redactor.MayHold(out[t.End:]) {
		return out
	}
	red, _ := g.redactor.JSON(out)
	return red
}
