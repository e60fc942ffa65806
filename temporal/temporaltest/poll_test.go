package temporaltest

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestPollReturnsAsSoonAsTheConditionHolds(t *testing.T) {
	t.Parallel()
	calls := 0
	start := time.Now()
	if !Poll(time.Minute, func() bool { calls++; return calls == 3 }) {
		t.Fatal("Poll gave up on a condition that held on the third call")
	}
	if calls != 3 || time.Since(start) > 10*time.Second {
		t.Fatalf("%d calls over %s; want 3 and no wait near the limit", calls, time.Since(start))
	}
}

func TestPollGivesUpAfterItsTimeHavingAskedOnceMoreAtTheEnd(t *testing.T) {
	t.Parallel()
	var last time.Time
	start := time.Now()
	if Poll(200*time.Millisecond, func() bool { last = time.Now(); return false }) {
		t.Fatal("Poll reported a condition that never held")
	}
	if last.Sub(start) < 200*time.Millisecond {
		t.Fatalf("the last try came %s after the start, before the time given ran out", last.Sub(start))
	}
}

func TestPollAsksOnceEvenWithNoTime(t *testing.T) {
	t.Parallel()
	if !Poll(0, func() bool { return true }) {
		t.Fatal("Poll(0) did not ask the condition")
	}
}

// recordingT is a testing.TB whose Fatalf records instead of failing.
type recordingT struct {
	testing.TB
	fatal string
}

func (r *recordingT) Helper() {}
func (r *recordingT) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
}

func TestEventuallyNamesWhatItWaitedFor(t *testing.T) {
	t.Parallel()
	r := &recordingT{TB: t}
	Eventually(r, 30*time.Millisecond, "the door to open", func() bool { return false })
	if !strings.Contains(r.fatal, "the door to open") || !strings.Contains(r.fatal, "30ms") {
		t.Fatalf("failure %q, want what was awaited and for how long", r.fatal)
	}
	r = &recordingT{TB: t}
	Eventually(r, time.Minute, "the door to open", func() bool { return true })
	if r.fatal != "" {
		t.Fatalf("a condition that held failed the test: %q", r.fatal)
	}
}

// TestNeedsSkipsOnlyUnderShort sets -short both ways, so it is not parallel.
func TestNeedsSkipsOnlyUnderShort(t *testing.T) {
	was := flag.Lookup("test.short").Value.String()
	t.Cleanup(func() { flag.Set("test.short", was) })
	for _, short := range []bool{true, false} {
		if err := flag.Set("test.short", fmt.Sprint(short)); err != nil {
			t.Fatal(err)
		}
		ran := false
		t.Run(fmt.Sprintf("short=%v", short), func(t *testing.T) {
			Needs(t, "a component")
			ran = true
		})
		if ran == short {
			t.Errorf("with -short=%v the test after Needs ran: %v", short, ran)
		}
	}
}
