package gateway

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/limit"
)

// rateLimit charges each request by what it asks for: a tools/call its
// tool's cost, anything else one unit of the principal's bucket. It runs
// after strict decoding because the charge depends on the tool, which only
// the decoded body names; and since a body is exactly one request, every
// call is charged, however the client batches or keeps its connection.
// A refusal is 429 with Retry-After and a JSON-RPC error naming the limit.
//
// With limits shared by replicas (Redis) that cannot be checked, and no
// local fallback, the call is refused with 503 (limitsUnavailable): never
// let through unlimited.
func (g *Server) rateLimit(l limit.Limiter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			span := g.link(r.Context(), "porthole rate limit")
			defer span.End()
			env, _ := envelopeFrom(r)
			cost, reaches := 1, false
			if env.Method == "tools/call" {
				// The global bucket protects the namespace; an upstream
				// tool's call reaches another server and is charged to its
				// caller alone.
				cost, reaches = l.Cost(env.Tool), g.upstreamOf(env.Tool) == ""
			}
			who := authenticatedPrincipal(r)
			ref, err := l.Charge(r.Context(), who, cost, reaches)
			if err != nil {
				g.limitsUnavailable(w, r, env.ID, err)
				return
			}
			if ref != nil {
				g.tooManyRequests(w, r, ref.Limit, ref.After, env.ID, "the "+ref.Limit+" rate limit")
				return
			}
			span.End()
			next.ServeHTTP(w, r)
		})
	}
}

// tooManyRequests is porthole's one 429: Retry-After in whole seconds (at
// least 1), a JSON-RPC error naming the limit, a denial record, a metric.
func (g *Server) tooManyRequests(w http.ResponseWriter, r *http.Request, limit string, after time.Duration, id json.RawMessage, reason string) {
	secs := max(1, int(math.Ceil(after.Seconds())))
	g.metrics.rateLimited(limit)
	g.denied(r, audit.OutcomeRateLimited, http.StatusTooManyRequests, reason)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeRPCError(w, http.StatusTooManyRequests, id, codeRateLimited,
		fmt.Sprintf("rate limited by the %s limit; retry after %d s", limit, secs))
}

// codeRateLimited is porthole's JSON-RPC error code for a rate-limited call,
// in the range JSON-RPC leaves to servers.
const codeRateLimited = -32029

// authenticatedPrincipal is the principal authentication admitted, or
// "anonymous" when authentication is off.
func authenticatedPrincipal(r *http.Request) string {
	if name, ok := r.Context().Value(principalKey{}).(string); ok {
		return name
	}
	return PrincipalAnonymous
}
