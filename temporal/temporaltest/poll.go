package temporaltest

import (
	"testing"
	"time"
)

// The wait between tries starts short and doubles up to a cap: a condition
// that holds at once costs one short wait, and one that takes seconds is
// asked a few times a second rather than continuously.
const (
	firstWait = 10 * time.Millisecond
	maxWait   = 500 * time.Millisecond
)

// Poll calls cond until it returns true or within has passed, and reports
// whether it did. A caller that wants to say more than what it waited for
// when cond never holds (the last state it saw, a process's log) keeps that
// state from its last call of cond.
func Poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	wait := firstWait
	for !cond() {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(wait, left))
		wait = min(2*wait, maxWait)
	}
	return true
}

// Eventually fails t unless cond returns true within the time given; what
// names the awaited state in the failure ("/readyz to turn unready").
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(within, cond) {
		t.Fatalf("waited %s for %s", within, what)
	}
}
