package main

import (
	"os"
	"runtime/debug"
)

// defaultGCPercent is the garbage collector's target when the operator has
// not set GOGC. Almost everything a call allocates is dead when it ends:
// the go-sdk alone takes a fresh 32 KiB buffer for each of the nine or so
// JSON values it decodes per request, about 300 KiB of a call's 350. At
// Go's default of 100 the collector took about an eighth of porthole's CPU
// at concurrency 1; at 200 it runs half as often, for a few MiB more heap
// (docs/performance.md reports the resident size at concurrency 64).
const defaultGCPercent = 200

// setGCPercent applies defaultGCPercent unless the operator set GOGC, which
// then stands as the runtime read it. GOMEMLIMIT, where set, bounds the
// heap either way: the collector runs sooner as the heap nears it.
func setGCPercent() {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return
	}
	debug.SetGCPercent(defaultGCPercent)
}
