package gateway

import (
	"bytes"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The legacy HTTP+SSE transport (protocol 2024-11-05), for older clients:
// GET /sse opens an event stream and names, in its first event, the URL
// (/sse?sessionid=...) to which the client POSTs its messages; answers come
// back on the stream. It is off unless the operator turns it on, and it
// takes the same chain as /mcp: Host and Origin, bearer authentication and
// failed-attempt limits on both the GET and every POST, strict decoding and
// rate limits on every POST (so each call is charged), the audit log and
// grants in the MCP server, and the wire redactor on every event.
//
// A session belongs to the principal that opened it: a POST into a session
// from any other principal is answered as if the session did not exist, so
// a leaked session id does not let one principal act as another.
//
// Sessions live in one process: behind several replicas, the legacy
// transport needs sticky sessions.

// sseSessions remembers which principal opened which session.
type sseSessions struct {
	mu     sync.Mutex
	owners map[string]string
}

// WithLegacySSE adds the legacy transport at /sse to the handler Handler
// built with the same options.
func (g *Server) WithLegacySSE(h http.Handler, opts HTTPOptions) (http.Handler, error) {
	opts, err := g.withDefaults(opts)
	if err != nil {
		return nil, err
	}
	sessions := &sseSessions{owners: map[string]string{}}
	sse := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return g.mcp }, &mcp.SSEOptions{
		DisableLocalhostProtection: true, // checkHostAndOrigin is in the chain
		MaxRequestBodyBytes:        opts.MaxBodyBytes,
	})
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The stream lives as long as the client keeps it: lift the
		// server's write deadline, which bounds ordinary answers.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		ci := callInfoFrom(r.Context())
		ci.Transport = "sse"
		r = r.WithContext(withCallInfo(r.Context(), ci))
		rw := &sseWriter{ResponseWriter: w, g: g, onSession: func(id string) {
			sessions.mu.Lock()
			sessions.owners[id] = principalFromRequest(r)
			sessions.mu.Unlock()
		}}
		sse.ServeHTTP(rw, r)
		if rw.session != "" {
			sessions.mu.Lock()
			delete(sessions.owners, rw.session)
			sessions.mu.Unlock()
		}
	})
	message := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("sessionid")
		sessions.mu.Lock()
		owner, ok := sessions.owners[id]
		sessions.mu.Unlock()
		if !ok || owner != principalFromRequest(r) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		sse.ServeHTTP(w, r)
	})
	limiter := newLimiter(opts.Limits)
	post := g.strictDecode(opts.MaxBodyBytes)(g.rateLimit(limiter)(g.auditRefusals(message)))
	get := http.Handler(stream)
	if !opts.DangerouslyServeWithoutAuthentication {
		failures := newFailureLimiter(10000, opts.FailedAuthBurst, opts.FailedAuthEvery)
		get = g.requireBearer(opts.Tokens, failures)(get)
		post = g.requireBearer(opts.Tokens, failures)(post)
	}

	r := chi.NewRouter()
	r.Use(g.recoverPanics, identify, clientAddress(opts.TrustedProxies), g.checkHostAndOrigin(opts.Hosts))
	r.Method(http.MethodGet, "/sse", get)
	r.Method(http.MethodPost, "/sse", g.redactResponses(post))
	r.NotFound(h.ServeHTTP)
	r.MethodNotAllowed(h.ServeHTTP)
	return r, nil
}

// sseWriter redacts each event of the stream as it is written (the go-sdk
// writes one whole event per Write), and learns the session id from the
// first event, which names the endpoint to POST to.
type sseWriter struct {
	http.ResponseWriter
	g         *Server
	session   string
	onSession func(string)
}

func (w *sseWriter) Write(p []byte) (int, error) {
	out := p
	if i := bytes.Index(p, []byte("data: ")); i >= 0 {
		data := bytes.TrimSuffix(p[i+len("data: "):], []byte("\n\n"))
		if w.session == "" && bytes.HasPrefix(p, []byte("event: endpoint\n")) {
			if u, err := url.Parse(string(data)); err == nil {
				w.session = u.Query().Get("sessionid")
				w.onSession(w.session)
			}
		}
		if red, n := w.g.redactor.JSON(data); n > 0 {
			out = append(append(append([]byte{}, p[:i+len("data: ")]...), red...), "\n\n"...)
		}
	} else if s, n := w.g.redactor.String(string(p)); n > 0 {
		out = []byte(s)
	}
	if _, err := w.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *sseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *sseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
