package limit

import (
	"container/list"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

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

// Check refuses limits that would not limit: a rate that is not a finite
// positive number (NaN and infinity let every call through), or a burst
// below one.
func (l Limits) Check() error {
	for _, r := range []struct {
		name  string
		rate  float64
		burst int
	}{{"per-principal", l.PerPrincipal, l.PerPrincipalBurst}, {"global", l.Global, l.GlobalBurst}} {
		if !(r.rate > 0) || math.IsInf(r.rate, 0) || r.burst < 1 {
			return fmt.Errorf("the %s rate limit (%v per second, burst %d) must be a finite positive rate with a burst of at least 1", r.name, r.rate, r.burst)
		}
	}
	return nil
}

// Default limits are safe for one namespace shared with other tools.
func Default() Limits {
	return Limits{PerPrincipal: 5, PerPrincipalBurst: 20, Global: 15, GlobalBurst: 30}
}

// defaultCosts reflect how many Temporal reads a tool makes and how heavy
// they are: a history page reads more than a describe, a task queue is two
// reads, a list is a visibility query, a worker deployment is a read and up
// to ten more (its versions' task queues). describe_workflow stays at 1 though a failed
// workflow's costs a second, small read (its close event alone): most
// workflows described are not failed ones.
var defaultCosts = map[string]int{
	policy.ToolDescribeWorkflow:         1,
	policy.ToolDescribeSchedule:         1,
	policy.ToolDescribeNamespace:        1,
	policy.ToolListSearchAttributes:     1,
	policy.ToolDescribeBatchOperation:   1,
	policy.ToolListWorkflows:            2,
	policy.ToolCountWorkflows:           2,
	policy.ToolListSchedules:            2,
	policy.ToolListBatchOperations:      2,
	policy.ToolListWorkerDeployments:    2,
	policy.ToolDescribeWorkerDeployment: 6,
	policy.ToolDescribeTaskQueue:        2,
	policy.ToolGetWorkflowHistory:       3,
}

// Cost is what one call of tool is charged; tools/list and other methods
// that read nothing from Temporal cost nothing globally (see Buckets.Charge).
func (l Limits) Cost(tool string) int {
	if c, ok := l.Costs[tool]; ok {
		return c
	}
	if c, ok := defaultCosts[tool]; ok {
		return c
	}
	return 1
}

// Buckets are the token buckets of the rate limits: one per principal, and
// one global. Principals are few (they come from the tokens
// file), so their buckets live as long as the process.
type Buckets struct {
	limits Limits
	global *rate.Limiter
	mu     sync.Mutex
	per    map[string]*rate.Limiter
	now    func() time.Time
}

// Cost is what one call of tool is charged under the buckets' limits.
func (l *Buckets) Cost(tool string) int { return l.limits.Cost(tool) }

// NewBuckets makes the buckets for l, full.
func NewBuckets(l Limits) *Buckets {
	return &Buckets{
		limits: l,
		global: rate.NewLimiter(rate.Limit(l.Global), l.GlobalBurst),
		per:    map[string]*rate.Limiter{},
		now:    time.Now,
	}
}

// sweepAt is how many principals' buckets are held before the full ones
// are dropped.
const sweepAt = 10000

func (l *Buckets) principal(name string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.per[name]
	if !ok {
		if len(l.per) >= sweepAt {
			l.dropFull()
		}
		lim = rate.NewLimiter(rate.Limit(l.limits.PerPrincipal), l.limits.PerPrincipalBurst)
		l.per[name] = lim
	}
	return lim
}

// dropFull drops the buckets that are full again: a full bucket is a new
// one, so nothing is lost, and the principals of OAuth issuers (anyone an
// issuer lets sign up) cannot grow the map without bound by calling once
// each. What remains are principals that called within
// a burst's refill time.
func (l *Buckets) dropFull() {
	now := l.now()
	for name, lim := range l.per {
		if lim.TokensAt(now) >= float64(l.limits.PerPrincipalBurst) {
			delete(l.per, name)
		}
	}
}

// Refusal says which limit refused a call and when to retry.
type Refusal struct {
	Limit string // "principal" or "global"
	After time.Duration
}

// Charge takes cost units from the principal's bucket and, for calls that
// reach Temporal, from the global bucket; both or neither. A nil refusal
// means the call may go ahead.
func (l *Buckets) Charge(principal string, cost int, reachesTemporal bool) *Refusal {
	now := l.now()
	p := l.principal(principal).ReserveN(now, cost)
	if !p.OK() {
		return &Refusal{Limit: "principal", After: time.Hour}
	}
	if d := p.DelayFrom(now); d > 0 {
		p.CancelAt(now)
		return &Refusal{Limit: "principal", After: d}
	}
	if !reachesTemporal {
		return nil
	}
	g := l.global.ReserveN(now, cost)
	if !g.OK() {
		p.CancelAt(now)
		return &Refusal{Limit: "global", After: time.Hour}
	}
	if d := g.DelayFrom(now); d > 0 {
		g.CancelAt(now)
		p.CancelAt(now)
		return &Refusal{Limit: "global", After: d}
	}
	return nil
}

// Failures limits failed authentication attempts per client address.
// Its memory is bounded: it remembers at most capacity addresses, dropping
// the least recently seen, so a flood of distinct bad tokens (one address)
// or of distinct addresses creates no unbounded state. Dropping an address
// forgets its failures, which a flood of addresses could use to reset one;
// the cost of that is the flood itself, and the per-address limit still
// holds against any one address that keeps guessing.
type Failures struct {
	mu       sync.Mutex
	capacity int
	every    time.Duration
	burst    int
	order    *list.List // front: most recently seen
	byAddr   map[string]*list.Element
	now      func() time.Time
}

type failureEntry struct {
	addr string
	lim  *rate.Limiter
}

// NewFailures remembers at most capacity addresses, each allowed burst
// failures and one more every interval.
func NewFailures(capacity, burst int, every time.Duration) *Failures {
	return &Failures{capacity: capacity, every: every, burst: burst, order: list.New(), byAddr: map[string]*list.Element{}, now: time.Now}
}

func (f *Failures) entry(addr string) *rate.Limiter {
	if e, ok := f.byAddr[addr]; ok {
		f.order.MoveToFront(e)
		return e.Value.(*failureEntry).lim
	}
	if f.order.Len() >= f.capacity {
		oldest := f.order.Back()
		f.order.Remove(oldest)
		delete(f.byAddr, oldest.Value.(*failureEntry).addr)
	}
	lim := rate.NewLimiter(rate.Every(f.every), f.burst)
	f.byAddr[addr] = f.order.PushFront(&failureEntry{addr: addr, lim: lim})
	return lim
}

// Blocked reports whether addr has used up its failures, and for how long.
func (f *Failures) Blocked(addr string) (bool, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.byAddr[addr]
	if !ok {
		return false, 0
	}
	lim := e.Value.(*failureEntry).lim
	now := f.now()
	if lim.TokensAt(now) >= 1 {
		return false, 0
	}
	r := lim.ReserveN(now, 1)
	d := r.DelayFrom(now)
	r.CancelAt(now)
	return true, d
}

// Failed records one failed attempt from addr.
func (f *Failures) Failed(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entry(addr).AllowN(f.now(), 1)
}

// Size is how many addresses are remembered.
func (f *Failures) Size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.order.Len()
}
