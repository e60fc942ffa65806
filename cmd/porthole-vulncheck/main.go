// Command porthole-vulncheck is the vulnerability gate of `make check`: it
// runs govulncheck over a module against a vulnerability database given as
// a folder, and fails when the module calls code with a known
// vulnerability that accepted.txt does not accept.
//
//	porthole-vulncheck -govulncheck PATH -db DIR [-accepted FILE] [-C DIR] [patterns]
//
// # What fails
//
// A vulnerability fails the gate when govulncheck finds it called: a trace
// from the module's own code reaches a vulnerable symbol (govulncheck's
// default symbol-level scan). A vulnerability only in a package that is
// imported, or a module that is required, is counted and named but does
// not fail: govulncheck reports those too, and most of them are code the
// binary never runs.
//
// # Accepting a finding
//
// An entry in the accepted file names the id, the last day it holds (in
// UTC) and the reason:
//
//	GO-2026-6809  2027-01-31  net/http: reached only by the bench, which serves loopback
//
// A called vulnerability with an entry passes, and its reason is printed,
// through the expiry date; from the day after, it fails again. An entry
// may not run more than [maxAcceptance] ahead, so an acceptance is looked
// at again. An entry for a vulnerability the scan no longer finds is named,
// so it can be removed. A malformed file fails the gate before anything is
// scanned.
//
// # Exit codes
//
// 0: nothing called that is not accepted. 1: a called vulnerability that is
// not accepted, or whose acceptance has expired. 2: the gate could not run
// (bad flags, a malformed accepted file, govulncheck failed).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, time.Now()))
}

func run(args []string, stdout, stderr io.Writer, now time.Time) int {
	fs := flag.NewFlagSet("porthole-vulncheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	govulncheck := fs.String("govulncheck", "", "the govulncheck binary")
	db := fs.String("db", "", "the vulnerability database: a folder in govulncheck's v1 layout")
	acceptedPath := fs.String("accepted", "", "the accepted findings (id, expiry, reason), if any")
	dir := fs.String("C", ".", "the module to scan")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *govulncheck == "" || *db == "" {
		fmt.Fprintln(stderr, "porthole-vulncheck: -govulncheck and -db are required")
		return 2
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	today := now.UTC().Format(time.DateOnly)
	var accepted []Acceptance
	if *acceptedPath != "" {
		var err error
		if accepted, err = readAccepted(*acceptedPath, today); err != nil {
			fmt.Fprintln(stderr, "porthole-vulncheck:", err)
			return 2
		}
	}
	scan, err := runGovulncheck(*govulncheck, *db, *dir, patterns)
	if err != nil {
		fmt.Fprintln(stderr, "porthole-vulncheck:", err)
		return 2
	}
	verdict := judge(scan, accepted, today)
	verdict.write(stdout, scan)
	if verdict.failed() {
		return 1
	}
	return 0
}

// runGovulncheck runs govulncheck's JSON output mode (whose exit code does
// not depend on the findings) and reads its messages.
func runGovulncheck(bin, db, dir string, patterns []string) (*Scan, error) {
	abs, err := filepath.Abs(db)
	if err != nil {
		return nil, err
	}
	entries, err := countEntries(abs)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"-db", "file://" + abs, "-format", "json"}, patterns...)...)
	cmd.Dir = dir
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting govulncheck: %w", err)
	}
	scan, readErr := readScan(out)
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return nil, fmt.Errorf("govulncheck failed (%v):\n%s", err, stderr.String())
		}
		return nil, err
	}
	if readErr != nil {
		return nil, fmt.Errorf("reading govulncheck's output: %w", readErr)
	}
	scan.DBEntries = entries
	return scan, nil
}

// countEntries counts the vulnerabilities in the database's index. A
// folder that is not a database, or one with no entry (a build that went
// wrong), is refused: a scan against it would find nothing and pass.
func countEntries(db string) (int, error) {
	raw, err := os.ReadFile(filepath.Join(db, "index", "vulns.json"))
	if err != nil {
		return 0, fmt.Errorf("%s is not a vulnerability database in govulncheck's v1 layout: %w (make vulndb builds it)", db, err)
	}
	var index []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		return 0, fmt.Errorf("%s/index/vulns.json: %w", db, err)
	}
	if len(index) == 0 {
		return 0, fmt.Errorf("the vulnerability database %s holds no entry", db)
	}
	return len(index), nil
}

// limitedBuffer keeps the first 64 KiB written to it: govulncheck's error
// output, for the message when it fails.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }
