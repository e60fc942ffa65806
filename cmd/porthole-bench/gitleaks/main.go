// Command gitleaks is porthole-bench's outside anchor for redaction
// throughput: built as porthole-bench-gitleaks (make bench-scale), it times
// gitleaks' detector, with its default rules, scanning a corpus that
// `porthole-bench scale` writes, and prints what it measured and what
// gitleaks found as one JSON object.
//
// It is a module of its own so that gitleaks and what it depends on stay
// out of porthole's module graph (cmd/porthole's dependency test holds
// that).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
)

// result is what the command prints: the corpus's size, the scans done in
// the time measured, the findings of the first scan, and the version of
// gitleaks built in.
type result struct {
	Version  string    `json:"version"`
	Bytes    int       `json:"bytes"`
	Scans    int       `json:"scans"`
	Seconds  float64   `json:"seconds"`
	Findings []finding `json:"findings"`
}

// finding is one of gitleaks' findings: its rule, the secret it captured
// and the whole text its rule matched.
type finding struct {
	Rule   string `json:"rule"`
	Secret string `json:"secret"`
	Match  string `json:"match"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "porthole-bench-gitleaks:", err)
		os.Exit(1)
	}
}

func run() error {
	corpus := flag.String("corpus", "", "the file to scan")
	duration := flag.Duration("duration", 2*time.Second, "how long to scan it again and again (at least once)")
	flag.Parse()
	if *corpus == "" {
		return fmt.Errorf("-corpus is required")
	}
	// gitleaks logs to stderr through zerolog; nothing of it is wanted
	// beside the one JSON object.
	zerolog.SetGlobalLevel(zerolog.Disabled)
	logging.Logger = logging.Logger.Level(zerolog.Disabled)

	b, err := os.ReadFile(*corpus)
	if err != nil {
		return err
	}
	text := string(b)
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		return err
	}
	out := result{Version: gitleaksVersion(), Bytes: len(text), Findings: []finding{}}
	start := time.Now()
	deadline := start.Add(*duration)
	for out.Scans == 0 || time.Now().Before(deadline) {
		found := d.DetectString(text)
		if out.Scans == 0 {
			for _, f := range found {
				out.Findings = append(out.Findings, finding{Rule: f.RuleID, Secret: f.Secret, Match: f.Match})
			}
		}
		out.Scans++
	}
	out.Seconds = time.Since(start).Seconds()
	return json.NewEncoder(os.Stdout).Encode(out)
}

// gitleaksVersion is the version of the gitleaks module built into the
// binary, as its build information records it.
func gitleaksVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == "github.com/zricethezav/gitleaks/v8" {
				return m.Version
			}
		}
	}
	return "(unknown)"
}
