package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// MaxBodyBytes caps a request body. A tools/call with the largest arguments
// porthole accepts (a 2 KiB query, a 4 KiB page token) is far below it; the
// cap keeps a client from making porthole buffer an arbitrary body.
const MaxBodyBytes = 1 << 20

// HTTPOptions configure the HTTP front.
type HTTPOptions struct {
	// Tokens returns the current token set. Nil with
	// DangerouslyServeWithoutAuthentication serves everyone as "anonymous".
	Tokens func() *Tokens
	// DangerouslyServeWithoutAuthentication turns authentication off.
	DangerouslyServeWithoutAuthentication bool
}

// ErrNoAuthentication is returned by Handler when no token source is given
// and authentication was not deliberately switched off.
var ErrNoAuthentication = errors.New("no tokens configured and authentication not explicitly disabled")

// Handler is the HTTP front: POST /mcp behind authentication, 405 for GET and
// DELETE on /mcp, 404 for every other path.
func (g *Server) Handler(opts HTTPOptions) (http.Handler, error) {
	if opts.Tokens == nil && !opts.DangerouslyServeWithoutAuthentication {
		return nil, ErrNoAuthentication
	}
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		MaxRequestBodyBytes: MaxBodyBytes,
	})
	endpoint := g.auditRefusals(streamable)
	if !opts.DangerouslyServeWithoutAuthentication {
		endpoint = requireBearer(opts.Tokens, g.denied)(endpoint)
	}

	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.Use(identify)
	r.Method(http.MethodPost, "/mcp", g.redactResponses(endpoint))
	notAllowed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	})
	r.Method(http.MethodGet, "/mcp", notAllowed)
	r.Method(http.MethodDelete, "/mcp", notAllowed)
	r.MethodNotAllowed(notAllowed)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "not found", http.StatusNotFound) })
	return r, nil
}

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
		// 16 KiB of headers is ample for a bearer token and an MCP client.
		MaxHeaderBytes: 16 << 10,
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
