package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/gateway/limit"
	"github.com/porthole-dev/porthole/gateway/tokens"
)

// MaxBodyBytes caps a request body. A tools/call with the largest arguments
// porthole accepts (a 2 KiB query, a 4 KiB page token) is far below it; the
// cap keeps a client from making porthole buffer an arbitrary body.
const MaxBodyBytes = 1 << 20

// HTTPOptions configure the HTTP front.
type HTTPOptions struct {
	// Tokens returns the current token set. Nil with
	// DangerouslyServeWithoutAuthentication serves everyone as "anonymous".
	Tokens func() *tokens.Set
	// DangerouslyServeWithoutAuthentication turns authentication off.
	DangerouslyServeWithoutAuthentication bool
	// Hosts and Origins allowed; the zero value is DefaultHostPolicy.
	Hosts HostPolicy
	// TrustedProxies may name the client they forward for.
	TrustedProxies TrustedProxies
	// Limits are the rate limits; the zero value is limit.Default.
	Limits limit.Limits
	// MaxBodyBytes caps a request body; zero means MaxBodyBytes.
	MaxBodyBytes int64
	// FailedAuthBurst failed authentications are allowed per client
	// address, then one per FailedAuthEvery. Zero means 10 and 6s.
	FailedAuthBurst int
	FailedAuthEvery time.Duration
	// AddrIPv6Prefix is the length of the IPv6 prefix that counts as one
	// client address for the failed-authentication limit and the
	// introspection quota (limit.AddrKey); zero means 64.
	AddrIPv6Prefix int
	// SSEMaxPerPrincipal and SSEMaxSessions bound the legacy SSE streams
	// open at once, per principal and in all; zero means 8 and 256. A
	// stream on which nothing happens for SSEIdleTimeout (zero: 5 minutes)
	// is closed.
	SSEMaxPerPrincipal int
	SSEMaxSessions     int
	SSEIdleTimeout     time.Duration
	// LegacySSE also serves the 2024-11-05 HTTP+SSE transport at /sse,
	// behind the same chain and the same buckets as /mcp.
	LegacySSE bool
	// OAuth, when set, admits OAuth access tokens beside the static tokens
	// and serves the protected resource metadata.
	OAuth *OAuthOptions
	// Shared, when set, keeps the rate limits and the failed-auth counts
	// in a store every replica shares (Redis) instead of in this process.
	Shared *SharedLimits
}

// SharedLimits put the rate limits and failed-authentication counts in a
// store the replicas share (PORTHOLE_REDIS_URL).
type SharedLimits struct {
	Store limit.Store
	// Timeout bounds each question to the store; zero means 50 ms.
	Timeout time.Duration
	// FallbackReplicas, when above zero, has porthole decide locally while
	// the store fails, at 1/FallbackReplicas of each limit
	// (PORTHOLE_REDIS_FAILURE=local, PORTHOLE_REPLICAS); zero refuses
	// every call with 503 while it fails (closed, the default).
	FallbackReplicas int
}

// ErrNoAuthentication is returned by Handler when no token source is given
// and authentication was not deliberately switched off.
var ErrNoAuthentication = errors.New("no tokens configured and authentication not explicitly disabled")

// Handler is the HTTP front. Every request passes, in this order:
//
//  1. recoverPanics: first, so that no later link can take the process down.
//  2. identify: a request id, returned as X-Request-Id and carried into
//     every log and audit record, and who the client is (RemoteAddr, or
//     X-Forwarded-For from a trusted proxy only), before anything can
//     refuse the request or key anything by its address.
//  3. redactResponses: wraps the writer, so that every byte written by any
//     later link passes the wire redactor, refusals included (an SSE stream
//     is redacted event by event).
//  4. checkHostAndOrigin: 403 for a Host or Origin not allowed, before
//     authentication, so a DNS-rebinding page learns nothing, not even
//     whether its token guess was right (the public OAuth metadata
//     excepted from the Origin check). Then cors: an allowed origin's
//     preflight of an MCP endpoint answered 204, and CORS headers on
//     every other answer there.
//  5. requireBearer: 401 without a valid token; failed attempts limited per
//     client address (429). After it, every request has a principal.
//  6. strictDecode: exactly one JSON-RPC request, no duplicate or case-
//     variant keys, within the size cap (413). It comes before rate
//     limiting (the design brief drew them the other way) because the charge
//     depends on the tool, which only the decoded body names; decoding is
//     bounded by the cap and only authenticated principals reach it.
//  7. rateLimit: per principal, per tool cost, and global (429 +
//     Retry-After).
//  8. auditRefusals and the MCP server: grants, audit, tools. A plain or
//     modern call of an own tool, or a plain call of a served tool, is
//     answered directly by the fast path (gateway/fastpath, whose doc
//     defines these words), through the same receiving middleware and
//     handler, without the go-sdk's per-request session; every other
//     request goes to the go-sdk's transport.
//
// Links 5 to 8 guard every route with the same buckets: a principal that
// uses both /mcp and the legacy /sse draws on one rate limit and one
// failed-authentication count.
//
// Only POST /mcp is served (and /sse when LegacySSE is set), with the
// preflight of an allowed origin; GET and DELETE on /mcp answer 405, other
// paths 404 (the OAuth metadata aside).
func (g *Server) Handler(opts HTTPOptions) (http.Handler, error) {
	opts, err := g.withDefaults(opts)
	if err != nil {
		return nil, err
	}
	limits := g.limiter(opts)
	authenticate := func(h http.Handler) http.Handler {
		if opts.DangerouslyServeWithoutAuthentication {
			return h
		}
		return g.requireBearer(opts.Tokens, limits, opts.OAuth, opts.AddrIPv6Prefix)(h)
	}
	guard := func(h http.Handler) http.Handler {
		return authenticate(g.strictDecode(opts.MaxBodyBytes, limits)(g.rateLimit(limits)(g.auditRefusals(h))))
	}
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// porthole checks Host itself (checkHostAndOrigin), against a list
		// the operator can extend; the go-sdk's own check knows only
		// loopback names and would refuse a same-pod proxy.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        opts.MaxBodyBytes,
	})
	routes := frontPaths(opts)
	r := chi.NewRouter()
	r.Use(securityHeaders, g.recoverPanics, identify(opts.TrustedProxies, g.opts.Tracing != nil), g.redactResponses,
		g.checkHostAndOrigin(opts.Hosts, routes), cors(routes, opts.Hosts, !opts.DangerouslyServeWithoutAuthentication))
	calls := http.Handler(streamable)
	if !g.opts.GoSDKOnly {
		calls = g.directCalls().Handler(streamable)
	}
	r.Method(http.MethodPost, "/mcp", guard(calls))
	if opts.OAuth != nil {
		serveResourceMetadata(r, opts.OAuth)
	}
	if opts.LegacySSE {
		stream, messages := g.legacySSE(opts)
		// Opening a stream is charged one unit of the principal's
		// bucket, as any request that reads nothing from Temporal.
		r.Method(http.MethodGet, "/sse", authenticate(g.rateLimit(limits)(stream)))
		r.Method(http.MethodPost, "/sse", guard(messages))
	}
	notAllowed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	})
	r.Method(http.MethodGet, "/mcp", notAllowed)
	r.Method(http.MethodDelete, "/mcp", notAllowed)
	r.MethodNotAllowed(notAllowed)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "not found", http.StatusNotFound) })
	return g.traced(r), nil
}

// frontPaths are the paths of the front's MCP endpoints and of its OAuth
// metadata, as Handler routes them.
func frontPaths(opts HTTPOptions) paths {
	p := paths{calls: map[string]bool{"/mcp": true}, metadata: map[string]bool{}}
	if opts.LegacySSE {
		p.calls["/sse"] = true
	}
	if opts.OAuth != nil {
		for _, path := range metadataPaths(opts.OAuth) {
			p.metadata[path] = true
		}
	}
	return p
}

// withDefaults fills the zero values of opts and refuses a front without
// authentication that was not asked for.
func (g *Server) withDefaults(opts HTTPOptions) (HTTPOptions, error) {
	if err := opts.checkAuthentication(); err != nil {
		return opts, err
	}
	if opts.Tokens == nil && opts.OAuth != nil {
		none, _ := tokens.Parse(strings.NewReader(""))
		opts.Tokens = func() *tokens.Set { return none }
	}
	if opts.Hosts.Hosts == nil {
		opts.Hosts = DefaultHostPolicy()
	}
	if opts.Limits.PerPrincipal == 0 && opts.Limits.Global == 0 {
		costs := opts.Limits.Costs // costs given stand with the default rates
		opts.Limits = limit.Default()
		opts.Limits.Costs = costs
	}
	if err := opts.Limits.Check(); err != nil {
		return opts, fmt.Errorf("gateway: %w", err)
	}
	opts.SSEMaxPerPrincipal = positiveOr(opts.SSEMaxPerPrincipal, 8)
	opts.SSEMaxSessions = positiveOr(opts.SSEMaxSessions, 256)
	opts.SSEIdleTimeout = positiveOr(opts.SSEIdleTimeout, 5*time.Minute)
	opts.MaxBodyBytes = positiveOr(opts.MaxBodyBytes, MaxBodyBytes)
	opts.FailedAuthBurst = positiveOr(opts.FailedAuthBurst, 10)
	opts.FailedAuthEvery = positiveOr(opts.FailedAuthEvery, DefaultFailedAuthEvery)
	if opts.AddrIPv6Prefix == 0 {
		opts.AddrIPv6Prefix = limit.DefaultIPv6Prefix
	}
	if opts.AddrIPv6Prefix < 1 || opts.AddrIPv6Prefix > 128 {
		return opts, fmt.Errorf("the IPv6 prefix of a client address is %d bits; it must be 1 to 128", opts.AddrIPv6Prefix)
	}
	return opts, nil
}

// checkAuthentication refuses a front without authentication that was not
// asked for, and authentication asked for two ways that exclude each
// other.
func (opts HTTPOptions) checkAuthentication() error {
	switch {
	case opts.Tokens == nil && opts.OAuth == nil && !opts.DangerouslyServeWithoutAuthentication:
		return ErrNoAuthentication
	case opts.OAuth != nil && opts.DangerouslyServeWithoutAuthentication:
		return fmt.Errorf("gateway: OAuth and serving without authentication are both asked for: choose one")
	// Security: the legacy SSE transport hands calls on a stream the
	// identity of the request that opened it, not of each POST, so an
	// OAuth token's scopes and claims would outlive its expiry and a
	// narrower token on later POSTs.
	case opts.OAuth != nil && opts.LegacySSE:
		return fmt.Errorf("gateway: the legacy SSE transport does not carry each request's OAuth token: it cannot be served with OAuth")
	}
	return nil
}

// DefaultFailedAuthEvery is how often a client address regains one failed
// authentication once its burst is spent.
const DefaultFailedAuthEvery = 6 * time.Second

// MaxHeaderBytes caps a request's line and headers together: ample for a
// bearer token and an MCP client. Above it the answer is 431.
const MaxHeaderBytes = 16 << 10

// netHTTPHeaderSlop is what net/http reads beyond http.Server's
// MaxHeaderBytes before it refuses a request's headers.
const netHTTPHeaderSlop = 4096

// NewHTTPServer wraps h in an http.Server whose timeouts bound what a slow
// or hostile client can hold open.
func NewHTTPServer(h http.Handler, log *zap.Logger) *http.Server {
	return &http.Server{
		Handler: h,
		// A client must send its headers within 5 s; this is what closes a
		// connection that trickles them (slowloris).
		ReadHeaderTimeout: 5 * time.Second,
		// The whole request, body included, within 30 s: bodies are small.
		ReadTimeout: 30 * time.Second,
		// The answer within 60 s: longer than any Temporal read should take.
		WriteTimeout: 60 * time.Second,
		// Idle keep-alive connections are closed after 2 minutes.
		IdleTimeout: 2 * time.Minute,
		// net/http reads up to MaxHeaderBytes plus 4 KiB of buffer slop
		// before it answers 431, so the setting is the cap less that
		// slop: what a client can send is MaxHeaderBytes in all.
		MaxHeaderBytes: MaxHeaderBytes - netHTTPHeaderSlop,
		ErrorLog:       zap.NewStdLog(log.Named("http")),
	}
}

// Serve serves on ln until ctx ends, then shuts down gracefully, waiting at
// most shutdownGrace for calls in flight.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, shutdownGrace time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
