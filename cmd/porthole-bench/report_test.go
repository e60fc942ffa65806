package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTheReportKeepsWhatOtherCommandsMeasured: a bench run rewrites the
// report but carries over, unchanged, the part headed for figures it does
// not measure.
func TestTheReportKeepsWhatOtherCommandsMeasured(t *testing.T) {
	path := filepath.Join(t.TempDir(), "performance.md")
	kept := elsewhereHeading + "\nThe soak wrote 1 MiB a minute.\n"
	if err := os.WriteFile(path, []byte("# Performance\n\nold bench figures\n"+kept), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := measuredElsewhere(path); got != kept {
		t.Fatalf("measuredElsewhere = %q, want %q", got, kept)
	}
	if got := measuredElsewhere(filepath.Join(t.TempDir(), "none.md")); got != "" {
		t.Fatalf("a report that does not exist kept %q", got)
	}
}

// TestTheChartDrawsABarForEveryModeAndConcurrency: make bench's chart,
// drawn as make bench-scale draws its curves, has a bar (with its value in
// its title) for each mode at each concurrency in each of its two panels.
func TestTheChartDrawsABarForEveryModeAndConcurrency(t *testing.T) {
	conc := []int{1, 32}
	var rs []result
	for _, m := range []string{"porthole", "sdk", "bare", "cached", "hop", "echo"} {
		for _, c := range conc {
			rs = append(rs, result{mode: m, concurrency: c, p50: time.Duration(c) * time.Millisecond, throughput: float64(100 * c)})
		}
	}
	svg := chart(rs, conc)
	if os.Getenv("PORTHOLE_BENCH_CHART") != "" {
		_ = os.WriteFile(os.Getenv("PORTHOLE_BENCH_CHART"), []byte(svg), 0o644)
	}
	if n := strings.Count(svg, "<title>"); n != 2*6*len(conc) {
		t.Errorf("%d bars, want %d", n, 2*6*len(conc))
	}
	for _, want := range []string{"<title>porthole c=32: 32.0</title>", "<title>echo c=1: 100.0</title>", "p50 latency (ms)", "throughput (calls/s)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
}

// TestTheTreeRowsCompareMerkleWithPortholeAtEachConcurrency: the Merkle
// tree's row at each concurrency sets merkle beside porthole with the A/A
// pair, and the tree alone (merkle beside signed) only where signed ran.
func TestTheTreeRowsCompareMerkleWithPortholeAtEachConcurrency(t *testing.T) {
	conc := []int{1, 32}
	var rs []result
	for _, c := range conc {
		rs = append(rs, result{mode: "porthole", concurrency: c, cpuPerCall: 100 * time.Microsecond},
			result{mode: "porthole-aa", concurrency: c, cpuPerCall: 101 * time.Microsecond},
			result{mode: "merkle", concurrency: c, cpuPerCall: 104 * time.Microsecond})
	}
	rs = append(rs, result{mode: "signed", concurrency: 32, cpuPerCall: 102 * time.Microsecond})
	var b strings.Builder
	reportTreeTargets(&b, rs, conc)
	rows := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(rows) != len(conc) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(conc), b.String())
	}
	for i, want := range []string{"concurrency 1 ", "concurrency 32 "} {
		for _, part := range []string{want, "CPU +4.0% (104µs vs 100µs)", "A/A (two portholes, neither): CPU +1.0%"} {
			if !strings.Contains(rows[i], part) {
				t.Errorf("row %d lacks %q: %s", i, part, rows[i])
			}
		}
	}
	if strings.Contains(rows[0], "the tree alone") || !strings.Contains(rows[1], "the tree alone (merkle vs signed): CPU +2.0%") {
		t.Errorf("the tree alone is not where signed ran:\n%s", b.String())
	}
}
