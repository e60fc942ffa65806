package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestGCPercentFollowsTheLiveHeap(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name string
		live uint64
		want int
	}{
		{"nothing measured yet is a small heap", 0, 200},
		{"a small heap is collected at 200", 4 * mib, 200},
		{"up to 8 MiB live the goal fits the budget at 200", 8 * mib, 200},
		{"between, the goal is held at the budget", 10 * mib, 140},
		{"from 12 MiB live it is Go's default", 12 * mib, 100},
		{"a large heap is never collected more often than by default", 1 << 30, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := gcPercentFor(c.live); got != c.want {
				t.Fatalf("gcPercentFor(%d MiB) = %d, want %d", c.live/mib, got, c.want)
			}
		})
	}
}

// gcPercent reads the collector's target without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestAnOperatorsGOGCStands(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	for _, v := range []string{"50", "off", ""} {
		t.Setenv("GOGC", v)
		debug.SetGCPercent(77) // whatever the runtime read at start
		tuneGC()
		if got := gcPercent(); got != 77 {
			t.Fatalf("GOGC=%q: porthole changed the target to %d", v, got)
		}
	}
}

func TestAfterEachGCRunsAfterEveryCollectionUntilTold(t *testing.T) {
	runs := make(chan struct{}, 10)
	n := 0
	afterEachGC(func() bool {
		n++
		runs <- struct{}{}
		return n < 3
	})
	for i := 0; i < 3; i++ {
		deadline := time.After(10 * time.Second)
	wait:
		for {
			runtime.GC()
			select {
			case <-runs:
				break wait
			case <-deadline:
				t.Fatalf("after %d runs, no run followed a collection", i)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	for i := 0; i < 3; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if len(runs) != 0 {
		t.Fatalf("f ran again after it returned false")
	}
}
