package gateway

import (
	"encoding/json"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/limit"
)

// limiter is the front's limiter: local buckets and failure counts, or, with
// opts.Shared, the store the replicas share, observed by the metrics and the
// operations log, with a local fallback at 1/replicas of each limit when
// asked for.
func (g *Server) limiter(opts HTTPOptions) limit.Limiter {
	local := limit.Local{Buckets: limit.NewBuckets(opts.Limits), Failures: limit.NewFailures(10000, opts.FailedAuthBurst, opts.FailedAuthEvery)}
	sh := opts.Shared
	if sh == nil {
		return local
	}
	g.metrics.registerShared()
	o := limit.SharedOptions{
		Store: sh.Store, Limits: opts.Limits, Timeout: sh.Timeout,
		FailedAuthBurst: opts.FailedAuthBurst, FailedAuthEvery: opts.FailedAuthEvery,
		OnAsk: g.metrics.sharedAsk,
		OnFallback: func(op string) {
			g.metrics.sharedFallback(op)
			g.log.Debug("a rate-limit decision made locally: the shared store does not answer", zap.String("op", op))
		},
		OnState: func(up bool, err error) {
			g.metrics.sharedUp(up)
			if up {
				g.log.Info("the shared rate-limit store (Redis) answers again: limits are shared again")
				return
			}
			how := "every call is refused with 503 until it answers (PORTHOLE_REDIS_FAILURE=closed)"
			if sh.FallbackReplicas > 0 {
				how = "each replica limits alone at 1/PORTHOLE_REPLICAS of each limit until it answers (PORTHOLE_REDIS_FAILURE=local)"
			}
			g.log.Error("the shared rate-limit store (Redis) does not answer: "+how, zap.Error(err))
		},
	}
	if n := sh.FallbackReplicas; n > 0 {
		o.Fallback = &limit.Local{
			Buckets:  limit.NewBuckets(opts.Limits.Divided(n)),
			Failures: limit.NewFailures(10000, max(1, opts.FailedAuthBurst/n), opts.FailedAuthEvery*time.Duration(n)),
		}
	}
	s := limit.NewShared(o)
	g.metrics.sharedUp(true)
	g.shared.Store(s)
	g.mu.Lock()
	g.closers = append(g.closers, s.Close)
	g.mu.Unlock()
	return s
}

// codeUnavailable is porthole's JSON-RPC error code for a call refused
// because the shared rate limits cannot be checked.
const codeUnavailable = -32030

// limitsUnavailable is porthole's one 503 for limits that cannot be
// checked: Retry-After 1, a JSON-RPC error saying why, a denial record of
// outcome "unavailable" (bounded like every denial), a metric.
func (g *Server) limitsUnavailable(w http.ResponseWriter, r *http.Request, id json.RawMessage, err error) {
	g.metrics.rateLimited("unavailable")
	g.denied(r, audit.OutcomeUnavailable, http.StatusServiceUnavailable, "the rate limits shared by the replicas could not be checked: "+err.Error())
	w.Header().Set("Retry-After", "1")
	writeRPCError(w, http.StatusServiceUnavailable, id, codeUnavailable,
		"porthole cannot check the rate limits it shares with its other replicas now (its Redis does not answer), so it refuses calls; retry shortly")
}
