package gateway

import (
	"container/list"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// failureLimiter limits failed authentication attempts per client address.
// Its memory is bounded: it remembers at most capacity addresses, dropping
// the least recently seen, so a flood of distinct bad tokens (one address)
// or of distinct addresses creates no unbounded state. Dropping an address
// forgets its failures, which a flood of addresses could use to reset one;
// the cost of that is the flood itself, and the per-address limit still
// holds against any one address that keeps guessing.
type failureLimiter struct {
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

func newFailureLimiter(capacity, burst int, every time.Duration) *failureLimiter {
	return &failureLimiter{capacity: capacity, every: every, burst: burst, order: list.New(), byAddr: map[string]*list.Element{}, now: time.Now}
}

func (f *failureLimiter) entry(addr string) *rate.Limiter {
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

// blocked reports whether addr has used up its failures, and for how long.
func (f *failureLimiter) blocked(addr string) (bool, time.Duration) {
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

// failed records one failed attempt from addr.
func (f *failureLimiter) failed(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entry(addr).AllowN(f.now(), 1)
}

// size is how many addresses are remembered.
func (f *failureLimiter) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.order.Len()
}
