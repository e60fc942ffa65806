package gateway

import (
	"bytes"
	"net/http"
	"net/url"
	"sync"
	"time"

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

// legacySSE returns the stream (GET /sse) and messages (POST /sse)
// handlers; Handler puts them behind the chain, and its wire redactor
// redacts the stream event by event.
func (g *Server) legacySSE(maxBody int64) (stream, messages http.Handler) {
	sessions := &sseSessions{owners: map[string]string{}}
	sse := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return g.mcp }, &mcp.SSEOptions{
		DisableLocalhostProtection: true, // checkHostAndOrigin is in the chain
		MaxRequestBodyBytes:        maxBody,
	})
	stream = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The stream lives as long as the client keeps it: lift the
		// server's write deadline, which bounds ordinary answers.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		ci := requestInfoFrom(r.Context())
		ci.Transport = "sse"
		r = r.WithContext(withRequestInfo(r.Context(), ci))
		owner := authenticatedPrincipal(r)
		// The session is bound to its owner before its first event, which
		// names it, reaches the client: no POST can race the binding.
		sw := &sessionWatcher{ResponseWriter: w, bind: func(id string) {
			sessions.mu.Lock()
			sessions.owners[id] = owner
			sessions.mu.Unlock()
		}}
		sse.ServeHTTP(sw, r)
		if sw.session != "" {
			sessions.mu.Lock()
			delete(sessions.owners, sw.session)
			sessions.mu.Unlock()
		}
	})
	messages = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("sessionid")
		sessions.mu.Lock()
		owner, ok := sessions.owners[id]
		sessions.mu.Unlock()
		if !ok || owner != authenticatedPrincipal(r) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		sse.ServeHTTP(w, r)
	})
	return stream, messages
}

// sessionWatcher learns the session id from the stream's first event,
// which names the endpoint to POST to, and passes every write on.
type sessionWatcher struct {
	http.ResponseWriter
	session string
	bind    func(id string)
}

func (w *sessionWatcher) Write(p []byte) (int, error) {
	if w.session == "" && bytes.HasPrefix(p, []byte("event: endpoint\n")) {
		if i := bytes.Index(p, []byte("data: ")); i >= 0 {
			if u, err := url.Parse(string(bytes.TrimSpace(p[i+len("data: "):]))); err == nil {
				w.session = u.Query().Get("sessionid")
				w.bind(w.session)
			}
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *sessionWatcher) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *sessionWatcher) Unwrap() http.ResponseWriter { return w.ResponseWriter }
