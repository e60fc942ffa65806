package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/gateway/tokens"
	"github.com/porthole-dev/porthole/gateway/upstream"
	"github.com/porthole-dev/porthole/policy"
)

// writeSharedStatus writes a line naming the state of the rate limits
// shared by replicas (Redis), when porthole uses them. It does not decide
// readiness: Redis is shared, so taking every replica out of service while
// it is down would only turn porthole's 503 and its sentence into
// connection errors; a call that cannot be limited is refused (or limited
// locally) on its own.
func (g *Server) writeSharedStatus(w io.Writer) {
	s := g.shared.Load()
	if s == nil {
		return
	}
	up, problem := s.State()
	switch {
	case up:
		_, _ = io.WriteString(w, "redis: up; the rate limits and failed-auth counts are shared\n")
	case s.FallingBack():
		_, _ = io.WriteString(w, "redis: does not answer ("+strconv.QuoteToASCII(problem)+"); limiting locally at 1/PORTHOLE_REPLICAS of each limit until it does\n")
	default:
		_, _ = io.WriteString(w, "redis: does not answer ("+strconv.QuoteToASCII(problem)+"); calls are refused with 503 until it does\n")
	}
}

// readyTimeout bounds the Temporal check behind /readyz.
const readyTimeout = 2 * time.Second

// AdminHandler serves the admin listener: /healthz (the process answers),
// /readyz (Temporal answers and the audit log takes records, so calls can
// succeed; a line on the shared rate limits (Redis) and a line per
// upstream MCP server follow, which do not decide
// readiness: an upstream that is down makes its own tools answer that it is
// down) and /metrics (Prometheus). It needs no token: bind it to loopback
// or a network only your monitoring reaches. The MCP listener serves none
// of these paths.
func (g *Server) AdminHandler() http.Handler {
	return g.adminHandler(false)
}

// AdminHandlerWithProfiling is AdminHandler plus Go's profiler under
// /debug/pprof/, for an operator chasing a cost. Profiles show code paths,
// not request data, but they are off unless asked for.
func (g *Server) AdminHandlerWithProfiling() http.Handler {
	return g.adminHandler(true)
}

func (g *Server) adminHandler(profiling bool) http.Handler {
	r := chi.NewRouter()
	r.Use(securityHeaders, g.recoverPanics)
	if profiling {
		r.With(g.requireAdminToken).Mount("/debug", middleware.Profiler())
	}
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	r.Get("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if problem := g.readinessProblem(); problem != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + problem + "\n"))
			g.writeUpstreamStatus(w)
			return
		}
		if err := g.raw.Ping(ctx); err != nil {
			g.log.Warn("not ready: Temporal does not answer", zap.Error(err))
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: Temporal does not answer\n"))
			g.writeUpstreamStatus(w)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
		g.writeUpstreamStatus(w)
	})
	r.With(g.requireAdminToken).Method(http.MethodGet, "/metrics", promhttp.HandlerFor(g.metrics.registry, promhttp.HandlerOpts{}))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "not found", http.StatusNotFound) })
	return r
}

// WatchTokens makes the admin listener tell the tokens file's problems:
// while the file cannot be read /readyz answers not ready with the reason,
// and while the tokens in force are not the file's (it cannot be read, or
// does not parse) the series porthole_tokens_file_ok is 0. Only the first
// store given is watched.
func (g *Server) WatchTokens(s *tokens.Store) {
	if !g.tokensStore.CompareAndSwap(nil, s) {
		return // watched already
	}
	g.metrics.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "porthole_tokens_file_ok",
		Help: "1 while the static tokens in force are the tokens file's; 0 while the file cannot be read (every static token refused) or does not parse (the last tokens it gave stay in force).",
	}, func() float64 {
		if s.Problem() != "" {
			return 0
		}
		return 1
	}))
	g.metrics.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "porthole_tokens_expiring",
		Help: "Static tokens in force that expire within 14 days (each is also logged once a day): replace them before their holders are refused.",
	}, func() float64 { return float64(s.ExpiringWithin(time.Now(), tokens.Expiring)) }))
}

// readinessProblem says why porthole cannot serve as configured: its audit
// sink fails (audit.Log.Problem says when), so calls are refused or their
// records may be lost; or its tokens file or its policy file cannot be
// read, so every static token is refused or nothing is granted. A file
// that does not parse is not one: the last good tokens or grants serve on,
// and the metric and the log say so, so that one bad edit pushed to every
// replica does not take them all out of service.
//
// A sink that fails takes the replica out of service, and with it the
// calls whose writes would show the sink well again; the audit log finds
// that out by itself, every second (see audit.Log.Problem).
func (g *Server) readinessProblem() string {
	if g.auditHealth != nil {
		if p := g.auditHealth.Problem(); p != "" {
			return p
		}
	}
	if s := g.tokensStore.Load(); s != nil && s.Problem() == tokens.ProblemUnreadable {
		return s.Problem()
	}
	if g.opts.Policy != nil && g.opts.Policy.Problem() == policy.ProblemPolicyUnreadable {
		return g.opts.Policy.Problem()
	}
	return ""
}

// UnconfiguredAdminHandler serves the admin paths of a porthole that serves
// nothing else: alive, never ready, with the reason.
func UnconfiguredAdminHandler(reason string) http.Handler {
	r := chi.NewRouter()
	r.Use(securityHeaders)
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	r.Get("/readyz", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not ready: "+reason, http.StatusServiceUnavailable)
	})
	return r
}

// writeUpstreamStatus writes one line per upstream: its connection, its
// tools and how its tool list is kept fresh.
func (g *Server) writeUpstreamStatus(w io.Writer) {
	g.writeSharedStatus(w)
	g.writeWitnessStatus(w)
	if g.upstreams == nil {
		return
	}
	for _, u := range g.upstreams.Upstreams() {
		s := u.Status()
		line := fmt.Sprintf("upstream %s (%s): %s", s.Name, s.Transport, s.State)
		if s.Reason != "" && s.State != upstream.StateUp {
			// The reason can hold the upstream's own words (an error it
			// answered): redacted, cut and quoted, so it cannot forge a
			// line of this report.
			reason, _ := g.redactor.String(s.Reason)
			line += " " + strconv.QuoteToASCII(g.quote.EscapeIdentifier(reason))
		}
		line += fmt.Sprintf("; %d tools exposed, %d withheld", s.Exposed, s.Withheld)
		switch s.ListMode {
		case upstream.ListNotified:
			line += "; tool list refreshed on notifications/tools/list_changed"
		case upstream.ListTTL:
			line += fmt.Sprintf("; tool list refreshed every %s", u.Entry.ListTTL)
		}
		if !s.ListedAt.IsZero() {
			line += fmt.Sprintf(", last read %s ago", time.Since(s.ListedAt).Round(time.Second))
		}
		line += fmt.Sprintf("; %d restarts\n", s.Restarts)
		_, _ = io.WriteString(w, line)
	}
}

// RequireAdminTokens makes /metrics (and the profiler, when served) answer
// only a request bearing a token of s, a tokens file of its own:
// the metrics name principals, tools and upstreams. /healthz and /readyz
// stay open, for probes that send nothing. Call it before AdminHandler.
func (g *Server) RequireAdminTokens(s *tokens.Store) {
	g.adminTokens = s.Current
	g.metrics.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "porthole_admin_tokens_expiring",
		Help: "Admin tokens in force that expire within 14 days (each is also logged once a day): replace them before /metrics refuses the scraper.",
	}, func() float64 { return float64(s.ExpiringWithin(time.Now(), tokens.Expiring)) }))
}

// requireAdminToken admits a request to what it guards only with a token
// of the admin tokens file, when one is set; the refusal is the 401 the
// MCP endpoint gives, without its OAuth metadata.
func (g *Server) requireAdminToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.adminTokens != nil {
			token, sent := tokens.Bearer(r.Header)
			if !sent {
				unauthorized(w, false, nil)
				return
			}
			if _, err := g.adminTokens().Lookup(token, time.Now()); err != nil {
				g.log.Info("admin request refused", zap.String("path", r.URL.Path), zap.String("why", err.Error()))
				unauthorized(w, true, nil)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// writeWitnessStatus writes a line for each witness the audit log sends its
// checkpoints to: how many records it cosigned, and since when it is
// behind. The reason of a failed try can hold the witness's own words:
// redacted, cut and quoted, as an upstream's are.
func (g *Server) writeWitnessStatus(w io.Writer) {
	h, ok := g.auditHealth.(witnessHealth)
	if !ok {
		return
	}
	for _, s := range h.Witnesses() {
		line := fmt.Sprintf("witness %s: cosigned %d records", s.Name, s.Size)
		if s.Behind > 0 {
			line += fmt.Sprintf("; behind (the tree of %d records) for %s", s.Behind, time.Since(s.BehindSince).Round(time.Second))
		}
		if s.Err != "" {
			reason, _ := g.redactor.String(s.Err)
			line += "; last try failed: " + strconv.QuoteToASCII(g.quote.EscapeIdentifier(reason))
		}
		_, _ = io.WriteString(w, line+"\n")
	}
}
