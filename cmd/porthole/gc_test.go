package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's target without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestSetGCPercent(t *testing.T) {
	cases := []struct {
		name string
		gogc *string // nil: unset
		want int
	}{
		{"without GOGC the target is porthole's default", nil, defaultGCPercent},
		{"an operator's GOGC stands", gogcValue("50"), 50},
		{"an operator's GOGC=off stands", gogcValue("off"), -1},
		{"an empty GOGC is the operator's too, and the runtime's 100 stands", gogcValue(""), 100},
	}
	defer debug.SetGCPercent(gcPercent())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOGC", "") // restored after the case
			runtimeRead := 100
			if c.gogc == nil {
				os.Unsetenv("GOGC")
			} else {
				os.Setenv("GOGC", *c.gogc)
				runtimeRead = c.want
			}
			debug.SetGCPercent(runtimeRead) // what the runtime read at start
			setGCPercent()
			if got := gcPercent(); got != c.want {
				t.Fatalf("the target is %d, want %d", got, c.want)
			}
		})
	}
}

func gogcValue(s string) *string { return &s }
