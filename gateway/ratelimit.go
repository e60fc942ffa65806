package gateway

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/policy"
)

// Limits configure rate limiting. Costs are in units of one Temporal read:
// a call is charged its tool's cost against its principal's bucket and
// against the global bucket that protects the namespace.
type Limits struct {
	// PerPrincipal is each principal's sustained rate, in units per second;
	// PerPrincipalBurst its bucket size.
	PerPrincipal      float64
	PerPrincipalBurst int
	// Global is the rate across all principals, in units per second.
	// Temporal Cloud allows 30 visibility reads per second per namespace;
	// the default stays well under it, leaving room for the namespace's
	// own tools.
	Global      float64
	GlobalBurst int
	// Costs override a tool's cost.
	Costs map[string]int
}

// check refuses limits that would not limit: a rate that is not a finite
// positive number (NaN and infinity let every call through), or a burst
// below one.
func (l Limits) check() error {
	for _, r := range []struct {
		name  string
		rate  float64
		burst int
	}{{"per-principal", l.PerPrincipal, l.PerPrincipalBurst}, {"global", l.Global, l.GlobalBurst}} {
		if !(r.rate > 0) || math.IsInf(r.rate, 0) || r.burst < 1 {
			return fmt.Errorf("gateway: the %s rate limit (%v per second, burst %d) must be a finite positive rate with a burst of at least 1", r.name, r.rate, r.burst)
		}
	}
	return nil
}

// DefaultLimits are safe for one namespace shared with other tools.
func DefaultLimits() Limits {
	return Limits{PerPrincipal: 5, PerPrincipalBurst: 20, Global: 15, GlobalBurst: 30}
}

// defaultCosts reflect how many Temporal reads a tool makes and how heavy
// they are: a history page reads more than a describe, a task queue is two
// reads, a list is a visibility query.
var defaultCosts = map[string]int{
	policy.ToolDescribeWorkflow:   1,
	policy.ToolDescribeSchedule:   1,
	policy.ToolDescribeNamespace:  1,
	policy.ToolListWorkflows:      2,
	policy.ToolCountWorkflows:     2,
	policy.ToolListSchedules:      2,
	policy.ToolDescribeTaskQueue:  2,
	policy.ToolGetWorkflowHistory: 3,
}

// Cost is what one call of tool is charged; tools/list and other methods
// that read nothing from Temporal cost nothing globally (see charge).
func (l Limits) Cost(tool string) int {
	if c, ok := l.Costs[tool]; ok {
		return c
	}
	if c, ok := defaultCosts[tool]; ok {
		return c
	}
	return 1
}

// limiter holds the buckets. Principals are few (they come from the tokens
// file), so their buckets live as long as the process.
type limiter struct {
	limits Limits
	global *rate.Limiter
	mu     sync.Mutex
	per    map[string]*rate.Limiter
	now    func() time.Time
}

func newLimiter(l Limits) *limiter {
	return &limiter{
		limits: l,
		global: rate.NewLimiter(rate.Limit(l.Global), l.GlobalBurst),
		per:    map[string]*rate.Limiter{},
		now:    time.Now,
	}
}

func (l *limiter) principal(name string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.per[name]
	if !ok {
		lim = rate.NewLimiter(rate.Limit(l.limits.PerPrincipal), l.limits.PerPrincipalBurst)
		l.per[name] = lim
	}
	return lim
}

// refusal says which limit refused a call and when to retry.
type refusal struct {
	limit string // "principal" or "global"
	after time.Duration
}

// charge takes cost units from the principal's bucket and, for calls that
// reach Temporal, from the global bucket; both or neither. A nil refusal
// means the call may go ahead.
func (l *limiter) charge(principal string, cost int, reachesTemporal bool) *refusal {
	now := l.now()
	p := l.principal(principal).ReserveN(now, cost)
	if !p.OK() {
		return &refusal{limit: "principal", after: time.Hour}
	}
	if d := p.DelayFrom(now); d > 0 {
		p.CancelAt(now)
		return &refusal{limit: "principal", after: d}
	}
	if !reachesTemporal {
		return nil
	}
	g := l.global.ReserveN(now, cost)
	if !g.OK() {
		p.CancelAt(now)
		return &refusal{limit: "global", after: time.Hour}
	}
	if d := g.DelayFrom(now); d > 0 {
		g.CancelAt(now)
		p.CancelAt(now)
		return &refusal{limit: "global", after: d}
	}
	return nil
}

// rateLimit charges each request by what it asks for: a tools/call its
// tool's cost, anything else one unit of the principal's bucket. It runs
// after strict decoding because the charge depends on the tool, which only
// the decoded body names; and since a body is exactly one request, every
// call is charged, however the client batches or keeps its connection.
// A refusal is 429 with Retry-After and a JSON-RPC error naming the limit.
func (g *Server) rateLimit(l *limiter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			env, _ := envelopeFrom(r)
			cost, reaches := 1, false
			if env.Method == "tools/call" {
				// The global bucket protects the namespace; an upstream
				// tool's call reaches another server and is charged to its
				// caller alone.
				cost, reaches = l.limits.Cost(env.Tool), g.upstreamOf(env.Tool) == ""
			}
			who := principalFromRequest(r)
			if ref := l.charge(who, cost, reaches); ref != nil {
				g.tooManyRequests(w, r, ref.limit, ref.after, env.ID, "the "+ref.limit+" rate limit")
				return
			}
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

// principalFromRequest is the principal authentication admitted, or
// "anonymous" when authentication is off.
func principalFromRequest(r *http.Request) string {
	if name, ok := r.Context().Value(principalKey{}).(string); ok {
		return name
	}
	return PrincipalAnonymous
}
