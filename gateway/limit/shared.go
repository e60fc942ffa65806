package limit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Limiter decides the rate limits and the failed-authentication block: in
// this process ([Local]) or in a store every replica shares ([Shared]).
// An error means the limiter could not decide; the caller refuses.
type Limiter interface {
	// Cost is what one call of tool is charged.
	Cost(tool string) int
	// Charge is [Buckets.Charge].
	Charge(ctx context.Context, principal string, cost int, reachesTemporal bool) (*Refusal, error)
	// Blocked and Failed are [Failures.Blocked] and [Failures.Failed].
	Blocked(ctx context.Context, addr string) (bool, time.Duration, error)
	Failed(ctx context.Context, addr string) error
	// Vouch records, for d, that the network vouched for the access token
	// of digest (a hash of it, never the token); Vouched asks whether it
	// did, in this or another replica. They decide only which budget of
	// introspections a token waits in, never whether it is admitted, so a
	// store that does not answer is not vouched.
	Vouch(ctx context.Context, digest string, d time.Duration)
	Vouched(ctx context.Context, digest string) bool
}

// Local is the Limiter of one process: its buckets and its failures. It
// never fails.
type Local struct {
	Buckets  *Buckets
	Failures *Failures
}

func (l Local) Cost(tool string) int { return l.Buckets.Cost(tool) }

func (l Local) Charge(_ context.Context, principal string, cost int, reachesTemporal bool) (*Refusal, error) {
	return l.Buckets.Charge(principal, cost, reachesTemporal), nil
}

func (l Local) Blocked(_ context.Context, addr string) (bool, time.Duration, error) {
	b, d := l.Failures.Blocked(addr)
	return b, d, nil
}

func (l Local) Failed(_ context.Context, addr string) error {
	l.Failures.Failed(addr)
	return nil
}

// Vouch and Vouched share nothing: one process's OAuth validator keeps
// the tokens it vouched for itself.
func (Local) Vouch(context.Context, string, time.Duration) {}

func (Local) Vouched(context.Context, string) bool { return false }

// Store is rate-limit state shared by replicas (gateway/limit/redislimit):
// the same decisions as [Local], made atomically where the state is.
type Store interface {
	Charge(ctx context.Context, principal string, cost int, reachesTemporal bool) (*Refusal, error)
	Blocked(ctx context.Context, addr string) (bool, time.Duration, error)
	Failed(ctx context.Context, addr string) error
	// Vouch and Vouched are [Limiter.Vouch] and [Limiter.Vouched], with
	// the store's error.
	Vouch(ctx context.Context, digest string, d time.Duration) error
	Vouched(ctx context.Context, digest string) (bool, error)
	// Probe asks whether the store answers a question that writes, as a
	// charge does (a store that answers reads but refuses writes, such as
	// a read-only replica or a full Redis, does not answer).
	Probe(ctx context.Context) error
}

// ErrUnavailable is a Shared limiter's answer while its store fails and it
// fails closed: the call is refused (503), never let through unlimited.
var ErrUnavailable = errors.New("the shared rate-limit store does not answer")

// SharedOptions configure a Shared limiter.
type SharedOptions struct {
	Store Store
	// Limits are the limits the store enforces (for Cost).
	Limits Limits
	// FailedAuthBurst and FailedAuthEvery are the failed-authentication
	// limit the store enforces; Shared counts failures locally with them
	// too. Zero means 10 and 6 s.
	FailedAuthBurst int
	FailedAuthEvery time.Duration
	// Timeout bounds each question to the store; an answer slower than it
	// is a failure. Zero means 50 ms.
	Timeout time.Duration
	// Fallback, when set, decides while the store fails: local buckets at
	// 1/replicas of each limit (see [Limits.Divided]). Nil fails closed.
	Fallback *Local
	// Trip is how many failures in a row open the breaker; zero means 3.
	Trip int
	// ProbeEvery is how often an open breaker pings the store; zero means
	// 250 ms.
	ProbeEvery time.Duration
	// Observers, each optional: every question's latency and error (op is
	// "charge", "blocked", "failed", "vouch", "vouched" or "probe"), every decision made by the
	// fallback, and every change of the store's state (called under the
	// breaker's lock, in order).
	OnAsk      func(op string, d time.Duration, err error)
	OnFallback func(op string)
	OnState    func(up bool, err error)
}

// Shared is a Limiter whose state is in a Store, with a circuit breaker:
// after Trip failures in a row the store is not asked again (each call
// would wait the timeout) until a probe, every ProbeEvery, finds it
// answering a question that writes. While it is open, or when a question
// fails, the call is decided by the fallback or refused with
// ErrUnavailable.
//
// Security: every failed authentication is also counted here, in a
// [Failures] of this process with the full burst, and an address blocked
// there is blocked whatever the store says. A store that answers the
// read of a count but refuses to record a failure (a read-only replica,
// a full Redis) would otherwise let a guesser fail without limit; the
// local count never blocks an address the shared one
// would not, since its failures here are among the shared ones.
type Shared struct {
	o       SharedOptions
	local   *Failures
	failing atomic.Int32 // failures in a row
	open    atomic.Bool
	mu      sync.Mutex // guards lastErr, probing and changes of open
	lastErr error
	probing bool
	stop    chan struct{}
	once    sync.Once
}

// NewShared makes a Shared limiter; Close stops its probe.
func NewShared(o SharedOptions) *Shared {
	if o.Timeout <= 0 {
		o.Timeout = 50 * time.Millisecond
	}
	if o.Trip <= 0 {
		o.Trip = 3
	}
	if o.ProbeEvery <= 0 {
		o.ProbeEvery = 250 * time.Millisecond
	}
	if o.FailedAuthBurst <= 0 {
		o.FailedAuthBurst = 10
	}
	if o.FailedAuthEvery <= 0 {
		o.FailedAuthEvery = 6 * time.Second
	}
	return &Shared{o: o, local: NewFailures(10000, o.FailedAuthBurst, o.FailedAuthEvery), stop: make(chan struct{})}
}

// Close stops the probe of an open breaker.
func (s *Shared) Close() { s.once.Do(func() { close(s.stop) }) }

func (s *Shared) Cost(tool string) int { return s.o.Limits.Cost(tool) }

// State says whether the store answers, and if not, why.
func (s *Shared) State() (up bool, problem string) {
	if !s.open.Load() {
		return true, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastErr == nil {
		return false, "does not answer"
	}
	return false, s.lastErr.Error()
}

// FallingBack says whether decisions are made by the fallback now.
func (s *Shared) FallingBack() bool { return s.open.Load() && s.o.Fallback != nil }

func (s *Shared) Charge(ctx context.Context, principal string, cost int, reachesTemporal bool) (*Refusal, error) {
	var ref *Refusal
	err := s.ask(ctx, "charge", func(ctx context.Context) (err error) {
		ref, err = s.o.Store.Charge(ctx, principal, cost, reachesTemporal)
		return err
	})
	if err == nil {
		return ref, nil
	}
	if fb := s.fallback(err, "charge"); fb != nil {
		return fb.Charge(ctx, principal, cost, reachesTemporal)
	}
	return nil, err
}

func (s *Shared) Blocked(ctx context.Context, addr string) (bool, time.Duration, error) {
	if blocked, after := s.local.Blocked(addr); blocked {
		return true, after, nil
	}
	var (
		blocked bool
		after   time.Duration
	)
	err := s.ask(ctx, "blocked", func(ctx context.Context) (err error) {
		blocked, after, err = s.o.Store.Blocked(ctx, addr)
		return err
	})
	if err == nil {
		return blocked, after, nil
	}
	if fb := s.fallback(err, "blocked"); fb != nil {
		return fb.Blocked(ctx, addr)
	}
	return false, 0, err
}

func (s *Shared) Failed(ctx context.Context, addr string) error {
	s.local.Failed(addr)
	err := s.ask(ctx, "failed", func(ctx context.Context) error { return s.o.Store.Failed(ctx, addr) })
	if err == nil {
		return nil
	}
	if fb := s.fallback(err, "failed"); fb != nil {
		return fb.Failed(ctx, addr)
	}
	return err
}

// Vouch records the digest in the store; a store that does not answer
// loses it (the token then waits with strangers' in other replicas).
func (s *Shared) Vouch(ctx context.Context, digest string, d time.Duration) {
	_ = s.ask(ctx, "vouch", func(ctx context.Context) error { return s.o.Store.Vouch(ctx, digest, d) })
}

func (s *Shared) Vouched(ctx context.Context, digest string) bool {
	var vouched bool
	err := s.ask(ctx, "vouched", func(ctx context.Context) (err error) {
		vouched, err = s.o.Store.Vouched(ctx, digest)
		return err
	})
	return err == nil && vouched
}

// fallback is who decides after err: the fallback, counted, or nobody
// (the caller's ctx ended, or the limiter fails closed).
func (s *Shared) fallback(err error, op string) *Local {
	if s.o.Fallback == nil {
		return nil
	}
	if s.o.OnFallback != nil {
		s.o.OnFallback(op)
	}
	return s.o.Fallback
}

// ask puts one question to the store within the timeout, unless the
// breaker is open.
//
// Security: the question is asked on a context the caller cannot end, only
// the timeout can: a client that half-closes its side still reads its
// answer, and a failed authentication it could keep from being counted
// by hanging up would be one more free guess. So a
// store that does not answer within the timeout is the store's failure,
// whatever the caller did.
func (s *Shared) ask(ctx context.Context, op string, f func(context.Context) error) error {
	if s.open.Load() {
		return fmt.Errorf("%w (%s)", ErrUnavailable, s.problem())
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.Timeout)
	start := time.Now()
	err := f(actx)
	d := time.Since(start)
	timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
	cancel()
	if s.o.OnAsk != nil {
		s.o.OnAsk(op, d, err)
	}
	if err == nil {
		// A read (blocked, vouched) does not close the count of failures in a
		// row: a store that answers reads and refuses writes fails every
		// write, and must open the breaker.
		if op != "blocked" && op != "vouched" {
			s.failing.Store(0)
		}
		return nil
	}
	if timedOut {
		err = fmt.Errorf("no answer within %v: %w", s.o.Timeout, err)
	}
	if int(s.failing.Add(1)) >= s.o.Trip {
		s.trip(err)
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

func (s *Shared) problem() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastErr == nil {
		return "the breaker is open"
	}
	return s.lastErr.Error()
}

// trip opens the breaker and starts the probe that closes it, under the
// lock the probe closes it under: a failure of a question begun before
// the probe closed the breaker opens it again with a probe of its own,
// never without one (it stayed open for good).
func (s *Shared) trip(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = err
	if !s.open.Swap(true) && s.o.OnState != nil {
		s.o.OnState(false, err)
	}
	if !s.probing {
		s.probing = true
		go s.probe()
	}
}

// probe pings the store every ProbeEvery until it answers, then closes
// the breaker: porthole recovers by itself.
func (s *Shared) probe() {
	t := time.NewTicker(s.o.ProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
		start := time.Now()
		err := s.o.Store.Probe(ctx)
		cancel()
		if s.o.OnAsk != nil {
			s.o.OnAsk("probe", time.Since(start), err)
		}
		s.mu.Lock()
		if err != nil {
			s.lastErr = err
			s.mu.Unlock()
			continue
		}
		s.probing = false
		s.failing.Store(0)
		s.open.Store(false)
		if s.o.OnState != nil {
			s.o.OnState(true, nil)
		}
		s.mu.Unlock()
		return
	}
}

// Divided are the limits one of replicas enforces alone, so that
// together they allow what l allows: each rate and burst divided, a burst
// rounded down but at least 1 (so a burst below replicas allows up to
// replicas in all). A tool costing more than a divided burst cannot be
// called while divided.
func (l Limits) Divided(replicas int) Limits {
	if replicas <= 1 {
		return l
	}
	n := float64(replicas)
	d := l
	d.PerPrincipal, d.Global = l.PerPrincipal/n, l.Global/n
	d.PerPrincipalBurst, d.GlobalBurst = max(1, l.PerPrincipalBurst/replicas), max(1, l.GlobalBurst/replicas)
	return d
}
