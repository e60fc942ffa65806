package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// The garbage collector's target, when the operator has not set GOGC.
//
// Almost everything a call allocates is dead when it ends: the go-sdk alone
// takes a fresh 32 KiB buffer for each of the nine or so JSON values it
// decodes per request, about 300 KiB of a call's 350. At Go's default GOGC
// of 100 the collector took about an eighth of porthole's CPU at
// concurrency 1. At 200 it runs half as often; but the heap may then grow
// to three times what is live, and under load (64 calls in flight, some
// 10 MiB live) that cost about 10 MiB of resident memory.
//
// So porthole collects at 200 while the live heap is small, and lowers the
// percentage as it grows, so that the heap's goal stays within
// gcGoalBudget, but never below Go's default of 100: a porthole with a
// large live heap collects as Go would by default, never more often.
const (
	maxGCPercent = 200
	minGCPercent = 100
	gcGoalBudget = 24 << 20
)

// gcPercentFor is the GC percentage for a live heap of live bytes: 200 up
// to 8 MiB live (porthole's at concurrency 1 is 5 to 6.6), then falling
// to 100 at 12 MiB (64 calls in flight hold 7.5 to 12.5).
func gcPercentFor(live uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	p := int(uint64(gcGoalBudget)*100/live) - 100
	return min(maxGCPercent, max(minGCPercent, p))
}

// tuneGC applies gcPercentFor at start and after every collection, unless
// the operator set GOGC, which then stands as the runtime read it.
// GOMEMLIMIT, where set, bounds the heap either way.
func tuneGC() {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return
	}
	debug.SetGCPercent(maxGCPercent)
	current := maxGCPercent
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	afterEachGC(func() bool {
		metrics.Read(live)
		if live[0].Value.Kind() != metrics.KindUint64 {
			return false // a runtime without the metric: stay at 200
		}
		if p := gcPercentFor(live[0].Value.Uint64()); p != current {
			debug.SetGCPercent(p)
			current = p
		}
		return true
	})
}

// afterEachGC calls f on the finalizer goroutine after each collection
// until f returns false: a finalizer runs once its object is found
// unreachable, which the next cycle does, and each run arms the next.
func afterEachGC(f func() bool) {
	type sentinel struct{ _ *int } // holds a pointer: never a tiny allocation
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		if f() {
			afterEachGC(f)
		}
	})
}
