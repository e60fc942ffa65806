package main

import (
	"os"
	"path/filepath"
	"testing"
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
