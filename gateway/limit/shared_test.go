package limit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// flakyStore is a Store whose answers the test sets: it stands in for
// Redis only in these tests of the breaker's logic; the behaviour against
// a real Redis is tested in redislimit and cmd/porthole.
type flakyStore struct {
	down  atomic.Bool
	asked atomic.Int32
	pings atomic.Int32
}

var errDown = errors.New("connection refused")

func (f *flakyStore) Charge(context.Context, string, int, bool) (*Refusal, error) {
	f.asked.Add(1)
	if f.down.Load() {
		return nil, errDown
	}
	return nil, nil
}

func (f *flakyStore) Blocked(context.Context, string) (bool, time.Duration, error) {
	f.asked.Add(1)
	if f.down.Load() {
		return false, 0, errDown
	}
	return false, 0, nil
}

func (f *flakyStore) Failed(context.Context, string) error {
	f.asked.Add(1)
	if f.down.Load() {
		return errDown
	}
	return nil
}

func (f *flakyStore) Ping(context.Context) error {
	f.pings.Add(1)
	if f.down.Load() {
		return errDown
	}
	return nil
}

func TestAClosedSharedLimiterRefusesAndRecovers(t *testing.T) {
	t.Parallel()
	st := &flakyStore{}
	var mu sync.Mutex
	var states []bool
	s := NewShared(SharedOptions{Store: st, Limits: Default(), ProbeEvery: 10 * time.Millisecond,
		OnState: func(up bool, _ error) { mu.Lock(); states = append(states, up); mu.Unlock() }})
	defer s.Close()
	ctx := context.Background()
	if ref, err := s.Charge(ctx, "alice", 1, true); ref != nil || err != nil {
		t.Fatalf("up: %v %v", ref, err)
	}
	st.down.Store(true)
	for i := range 10 {
		if _, err := s.Charge(ctx, "alice", 1, true); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("call %d with the store down: %v, want ErrUnavailable", i, err)
		}
		if _, _, err := s.Blocked(ctx, "192.0.2.1"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("blocked %d with the store down: %v", i, err)
		}
	}
	// The breaker opened after three failures in a row: later calls did
	// not wait on the store.
	if n := st.asked.Load(); n != 1+3 {
		t.Fatalf("the store was asked %d times; want 1 + the 3 that open the breaker", n)
	}
	if up, problem := s.State(); up || problem == "" {
		t.Fatalf("state: up %v, problem %q", up, problem)
	}
	st.down.Store(false)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if up, _ := s.State(); up {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the breaker did not close after the store came back")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ref, err := s.Charge(ctx, "alice", 1, true); ref != nil || err != nil {
		t.Fatalf("recovered: %v %v", ref, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(states) != 2 || states[0] || !states[1] {
		t.Fatalf("state changes %v: want down, then up", states)
	}
}

func TestALocalFallbackLimitsAtItsShare(t *testing.T) {
	t.Parallel()
	st := &flakyStore{}
	st.down.Store(true)
	l := Limits{PerPrincipal: 0.001, PerPrincipalBurst: 9, Global: 1000, GlobalBurst: 1000}
	var fallbacks atomic.Int32
	fb := &Local{Buckets: NewBuckets(l.Divided(3)), Failures: NewFailures(100, 1, time.Hour)}
	s := NewShared(SharedOptions{Store: st, Limits: l, Fallback: fb, ProbeEvery: time.Hour,
		OnFallback: func(string) { fallbacks.Add(1) }})
	defer s.Close()
	admitted := 0
	for range 10 {
		ref, err := s.Charge(context.Background(), "alice", 1, true)
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			admitted++
		}
	}
	if admitted != 3 {
		t.Fatalf("%d of 10 admitted by the fallback; a third of a burst of 9 is 3", admitted)
	}
	if fallbacks.Load() != 10 || !s.FallingBack() {
		t.Fatalf("%d fallbacks counted of 10; falling back %v", fallbacks.Load(), s.FallingBack())
	}
}

func TestACallerHangingUpDoesNotOpenTheBreaker(t *testing.T) {
	t.Parallel()
	st := &flakyStore{}
	s := NewShared(SharedOptions{Store: st, Limits: Default()})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 5 {
		if _, err := s.Charge(ctx, "alice", 1, true); !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled caller: %v", err)
		}
	}
	if up, _ := s.State(); !up {
		t.Fatal("cancelled callers opened the breaker")
	}
}

func TestDividedLimitsAddUpToTheWhole(t *testing.T) {
	t.Parallel()
	d := Limits{PerPrincipal: 6, PerPrincipalBurst: 20, Global: 15, GlobalBurst: 2}.Divided(3)
	if d.PerPrincipal != 2 || d.PerPrincipalBurst != 6 || d.Global != 5 || d.GlobalBurst != 1 {
		t.Fatalf("divided by 3: %+v", d)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
}
