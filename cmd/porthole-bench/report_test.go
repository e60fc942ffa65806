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
