package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// measureAt runs every mode at concurrency n for the duration, in rounds,
// prints a line for each and returns their results.
func measureAt(ctx context.Context, modes []mode, n int, o options) ([]result, error) {
	acc := make([]measured, len(modes))
	slice := o.duration / time.Duration(o.rounds)
	// Each mode runs for its duration in rounds, the modes taking turns
	// (and a different one first each round), so that a slow spell of the
	// shared machine falls on every mode alike rather than on whichever ran
	// then: the ratios compare modes measured in the same stretches of time.
	for round := range o.rounds {
		for k := range modes {
			i := (round + k) % len(modes)
			profileTo := ""
			if o.profile != "" && n == o.conc[0] && round == 0 {
				switch modes[i].name {
				case "porthole":
					profileTo = o.profile
				case "oauth", "traced", "redis", "profiled", "pseudonymised", "signed", "merkle":
					profileTo = strings.TrimSuffix(o.profile, ".prof") + "." + modes[i].name + ".prof"
				}
			}
			if err := acc[i].turn(ctx, modes[i], n, slice, profileTo); err != nil {
				return nil, err
			}
		}
	}
	results := make([]result, 0, len(modes))
	for i, m := range modes {
		r := acc[i].result(m.name, n, o.duration)
		fmt.Printf("%-8s c=%-3d calls=%-6d err=%-4d p50=%-9s p90=%-9s p99=%-9s %.0f/s cpu/call=%s alloc/call=%.0fB rss=%.1fMiB reads=%d\n",
			r.mode, n, r.calls, r.errors, r.p50, r.p90, r.p99, r.throughput, r.cpuPerCall, r.allocPerCall, r.rssMiB, r.temporalRPC)
		results = append(results, r)
	}
	return results, nil
}

// turn runs m from n goroutines for d and adds its latencies and its
// server's costs. With profileTo set, it writes a CPU profile of m's server
// over the turn there.
func (acc *measured) turn(ctx context.Context, m mode, n int, d time.Duration, profileTo string) error {
	var before stats
	if m.srv != nil {
		before = m.srv.stats()
	}
	var profiled chan error
	if profileTo != "" {
		profiled = make(chan error, 1)
		go func() { profiled <- m.srv.profile(profileTo, d) }()
	}
	acc.add(load(ctx, m.call, n, d))
	if profiled != nil {
		if err := <-profiled; err != nil {
			return err
		}
		fmt.Println("== wrote", profileTo)
	}
	if m.srv != nil {
		after := m.srv.stats()
		acc.cpu += after.cpu - before.cpu
		acc.alloc += after.alloc - before.alloc
		acc.reads += int(after.reads - before.reads)
		acc.rssMiB, acc.heapMiB = max(acc.rssMiB, after.rssMiB), max(acc.heapMiB, after.heapMiB)
	}
	return nil
}

// measured is what the rounds of one mode at one concurrency gathered.
type measured struct {
	lat             []time.Duration
	errors          int
	cpu             time.Duration // server process CPU, where measured
	alloc           float64       // server bytes allocated, where measured
	reads           int           // Temporal reads the server made, where counted
	rssMiB, heapMiB float64       // the highest seen after a round
}

func (m *measured) add(lat []time.Duration, errors int) {
	m.lat = append(m.lat, lat...)
	m.errors += errors
}

// result summarises the rounds, which together ran for d.
func (m *measured) result(mode string, n int, d time.Duration) result {
	lat := m.lat
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(float64(len(lat))*p))]
	}
	r := result{mode: mode, concurrency: n, calls: len(lat), errors: m.errors, p50: pct(0.50), p90: pct(0.90), p99: pct(0.99),
		throughput: float64(len(lat)) / d.Seconds(), rssMiB: m.rssMiB, heapMiB: m.heapMiB, temporalRPC: m.reads}
	if len(lat) > 0 {
		r.cpuPerCall = m.cpu / time.Duration(len(lat))
		r.allocPerCall = m.alloc / float64(len(lat))
	}
	return r
}

// load runs call from n goroutines for d and returns each call's latency
// and the number of calls that failed.
func load(ctx context.Context, call func(context.Context) error, n int, d time.Duration) ([]time.Duration, int) {
	var mu sync.Mutex
	var lat []time.Duration
	var errs atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				start := time.Now()
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err := call(cctx)
				cancel()
				if err != nil {
					errs.Add(1)
					continue
				}
				mine = append(mine, time.Since(start))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat, int(errs.Load())
}

// coalescing fires n identical reads at once at a cold cache and reports how
// many Temporal reads they cost.
func coalescing(ctx context.Context, call func(context.Context) error, s *server) string {
	const n = 50
	time.Sleep(2500 * time.Millisecond) // let every kept answer expire
	before := s.stats().reads
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _ = call(ctx) }()
	}
	wg.Wait()
	return fmt.Sprintf("%d identical concurrent describe_workflow calls cost Temporal %d read(s) (porthole_temporal_read_duration_seconds_count).", n, int(s.stats().reads-before))
}
