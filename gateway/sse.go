package gateway

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
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
//
// Security: each open stream holds goroutines and buffers for as long as the
// client keeps it, so streams are bounded: at most SSEMaxPerPrincipal per
// principal and SSEMaxSessions in all (429 past either), opening one is
// charged to the principal's rate limit like any request, and a stream on
// which nothing has happened for SSEIdleTimeout is closed. Unbounded, one
// principal's 3,000 streams held 9,000 goroutines.

// sseSessions remembers which principal opened which session, and counts
// the open streams.
type sseSessions struct {
	mu          sync.Mutex
	owners      map[string]*sseSession
	open        int
	perOwner    map[string]int
	maxPerOwner int
	max         int
}

// sseSession is one session's owner and when it last saw a message or an
// event (sinceStart).
type sseSession struct {
	owner  string
	active atomic.Int64
}

// admit takes a stream slot for owner, or says which bound refuses it.
func (s *sseSessions) admit(owner string) (refused string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.perOwner[owner] >= s.maxPerOwner:
		return "too many legacy SSE streams open for this principal"
	case s.open >= s.max:
		return "too many legacy SSE streams open"
	}
	s.perOwner[owner]++
	s.open++
	return ""
}

// release gives back owner's slot and forgets the session, if one was
// bound.
func (s *sseSessions) release(owner, session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.perOwner[owner]--; s.perOwner[owner] <= 0 {
		delete(s.perOwner, owner)
	}
	if session != "" {
		delete(s.owners, session)
	}
}

// legacySSE returns the stream (GET /sse) and messages (POST /sse)
// handlers; Handler puts them behind the chain, and its wire redactor
// redacts the stream event by event.
func (g *Server) legacySSE(opts HTTPOptions) (stream, messages http.Handler) {
	maxBody, idle := opts.MaxBodyBytes, opts.SSEIdleTimeout
	sessions := &sseSessions{owners: map[string]*sseSession{}, perOwner: map[string]int{}, maxPerOwner: opts.SSEMaxPerPrincipal, max: opts.SSEMaxSessions}
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
		if refused := sessions.admit(owner); refused != "" {
			g.tooManyRequests(w, r, "sse-streams", 5*time.Second, nil, refused)
			return
		}
		state := &sseSession{owner: owner}
		state.active.Store(sinceStart())
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go closeWhenIdle(ctx, cancel, http.NewResponseController(w), &state.active, idle)
		// The session is bound to its owner before its first event, which
		// names it, reaches the client: no POST can race the binding.
		sw := &sessionWatcher{ResponseWriter: w, active: &state.active, bind: func(id string) {
			sessions.mu.Lock()
			sessions.owners[id] = state
			sessions.mu.Unlock()
		}}
		// Deferred, so that a panic in the stream gives its slot back.
		defer func() { sessions.release(owner, sw.session) }()
		sse.ServeHTTP(sw, r.WithContext(ctx))
	})
	messages = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("sessionid")
		sessions.mu.Lock()
		state, ok := sessions.owners[id]
		sessions.mu.Unlock()
		if !ok || state.owner != authenticatedPrincipal(r) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		state.active.Store(sinceStart())
		sse.ServeHTTP(w, r)
	})
	return stream, messages
}

// processStart anchors sinceStart, so that activity is timed on the
// monotonic clock: a step of the wall clock cannot close every stream.
var processStart = time.Now()

func sinceStart() int64 { return int64(time.Since(processStart)) }

// closeWhenIdle cancels a stream on which nothing has happened (no message
// posted into its session, no event written) for idle, checking a few
// times per idle period, until ctx ends.
func closeWhenIdle(ctx context.Context, cancel context.CancelFunc, rc *http.ResponseController, active *atomic.Int64, idle time.Duration) {
	tick := time.NewTicker(max(idle/8, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if time.Duration(sinceStart()-active.Load()) >= idle {
				// A client that stopped reading holds the stream's
				// write blocked (its deadline is lifted for the
				// stream), and with it the library's close: the
				// deadline, set now, ends that write.
				_ = rc.SetWriteDeadline(time.Now())
				cancel()
				return
			}
		}
	}
}

// sessionWatcher learns the session id from the stream's first event,
// which names the endpoint to POST to, notes every write as activity, and
// passes it on.
type sessionWatcher struct {
	http.ResponseWriter
	session string
	active  *atomic.Int64
	bind    func(id string)
}

func (w *sessionWatcher) Write(p []byte) (int, error) {
	w.active.Store(sinceStart())
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
