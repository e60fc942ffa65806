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

func (f *flakyStore) Vouch(context.Context, string, time.Duration) error {
	f.asked.Add(1)
	if f.down.Load() {
		return errDown
	}
	return nil
}

func (f *flakyStore) Vouched(context.Context, string) (bool, error) {
	f.asked.Add(1)
	if f.down.Load() {
		return false, errDown
	}
	return true, nil
}

func (f *flakyStore) Probe(context.Context) error {
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

// TestAQuestionOutlivesItsCaller: a caller that has gone away is still
// charged, and answered, as the store answers (found by review: a client
// hanging up early went uncounted).
func TestAQuestionOutlivesItsCaller(t *testing.T) {
	t.Parallel()
	st := &flakyStore{}
	s := NewShared(SharedOptions{Store: st, Limits: Default()})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 5 {
		if ref, err := s.Charge(ctx, "alice", 1, true); ref != nil || err != nil {
			t.Fatalf("a caller gone before the question: %v %v", ref, err)
		}
		if err := s.Failed(ctx, "192.0.2.1"); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.asked.Load(); n != 10 {
		t.Fatalf("the store was asked %d times for 10 questions of a gone caller", n)
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

// hangingStore answers nothing until the question's context ends.
type hangingStore struct{ flakyStore }

func (h *hangingStore) Charge(ctx context.Context, _ string, _ int, _ bool) (*Refusal, error) {
	h.asked.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestAHungStoreFailsAtTheTimeoutWhateverTheCaller: a caller whose own
// deadline is shorter does not cut the question short; the store's
// silence until the timeout is the store's failure.
func TestAHungStoreFailsAtTheTimeoutWhateverTheCaller(t *testing.T) {
	t.Parallel()
	s := NewShared(SharedOptions{Store: &hangingStore{}, Limits: Default(), Timeout: 30 * time.Millisecond, ProbeEvery: time.Hour})
	defer s.Close()
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		start := time.Now()
		_, err := s.Charge(ctx, "alice", 1, true)
		cancel()
		if !errors.Is(err, ErrUnavailable) || time.Since(start) < 30*time.Millisecond {
			t.Fatalf("a hung store: %v after %v", err, time.Since(start))
		}
	}
	if up, _ := s.State(); up {
		t.Fatal("three timeouts in a row did not open the breaker")
	}
}

// writelessStore answers reads but refuses every write, as a read-only
// replica or a full Redis does.
type writelessStore struct{ flakyStore }

func (w *writelessStore) Failed(context.Context, string) error { return errors.New("READONLY") }
func (w *writelessStore) Probe(context.Context) error          { return errors.New("READONLY") }

// TestFailuresAreLimitedWhenTheStoreCannotRecordThem: a store that says
// "not blocked" but cannot record a failure does not give a guesser
// unlimited tries (found by review): the local count blocks after the
// burst.
func TestFailuresAreLimitedWhenTheStoreCannotRecordThem(t *testing.T) {
	t.Parallel()
	s := NewShared(SharedOptions{Store: &writelessStore{}, Limits: Default(), FailedAuthBurst: 3, FailedAuthEvery: time.Hour})
	defer s.Close()
	ctx := context.Background()
	for i := range 3 {
		if blocked, _, _ := s.Blocked(ctx, "192.0.2.9"); blocked {
			t.Fatalf("blocked before failure %d", i)
		}
		_ = s.Failed(ctx, "192.0.2.9")
	}
	if blocked, after, err := s.Blocked(ctx, "192.0.2.9"); !blocked || after <= 0 || err != nil {
		t.Fatalf("after three failures the store could not record: blocked %v %v %v", blocked, after, err)
	}
}

// TestAFailureAfterRecoveryProbesAgain: a question that fails after the
// probe closed the breaker (it began before) opens it with a probe of its
// own, so it closes again (found by review: it stayed open for good).
func TestAFailureAfterRecoveryProbesAgain(t *testing.T) {
	t.Parallel()
	st := &flakyStore{}
	s := NewShared(SharedOptions{Store: st, Limits: Default(), ProbeEvery: 5 * time.Millisecond})
	defer s.Close()
	for range 3 {
		s.trip(errDown) // as three late failures would, the store being up
		deadline := time.Now().Add(5 * time.Second)
		for up, _ := s.State(); !up; up, _ = s.State() {
			if time.Now().After(deadline) {
				t.Fatal("the breaker stayed open with the store up")
			}
			time.Sleep(time.Millisecond)
		}
	}
	if st.pings.Load() < 3 {
		t.Fatalf("%d probes for three trips", st.pings.Load())
	}
}
