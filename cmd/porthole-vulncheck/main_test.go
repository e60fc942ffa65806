package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gate runs the gate as `make check` does, on the fixture module that
// calls a vulnerable symbol, with the accepted file holding lines, and
// returns its exit code and output. It needs the pinned govulncheck and
// database (make vulncheck builds them); without -short it fails rather
// than skips when they are missing.
func gate(t *testing.T, now time.Time, lines ...string) (int, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs govulncheck and the vulnerability database (make vulncheck)")
	}
	bin, db := os.Getenv("PORTHOLE_GOVULNCHECK"), os.Getenv("PORTHOLE_VULNDB")
	if _, err := os.Stat(bin); bin == "" || err != nil {
		t.Fatalf("govulncheck is not installed (PORTHOLE_GOVULNCHECK=%q): run `make vulncheck`, or `make test`, which does", bin)
	}
	if _, err := os.Stat(filepath.Join(db, "index", "db.json")); db == "" || err != nil {
		t.Fatalf("the vulnerability database is not built (PORTHOLE_VULNDB=%q): run `make vulncheck`, or `make test`, which does", db)
	}
	accepted := filepath.Join(t.TempDir(), "accepted.txt")
	if err := os.WriteFile(accepted, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	code := run([]string{"-govulncheck", bin, "-db", db, "-accepted", accepted, "-C", "testdata/calls-vulnerable"}, &out, &errs, now)
	if code == 2 {
		t.Fatalf("the gate could not run: %s", errs.String())
	}
	return code, out.String()
}

func TestTheGateFailsOnACalledVulnerabilityAndNamesIt(t *testing.T) {
	t.Parallel()
	code, out := gate(t, time.Now(), "# nothing accepted")
	if code != 1 {
		t.Fatalf("exit %d on a module that calls language.Parse of x/text v0.3.5, want 1:\n%s", code, out)
	}
	for _, want := range []string{
		"GO-2021-0113 (CVE-2021-38561, GHSA-ppp9-7jff-5vj2): Out-of-bounds read in golang.org/x/text/language\n",
		"  golang.org/x/text@v0.3.5, fixed in v0.3.7\n",
		"  called: calls-vulnerable.main calls language.Parse (main.go:15:28)\n",
		"FAIL: 1 called vulnerabilities not accepted: GO-2021-0113\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the gate's output lacks %q:\n%s", want, out)
		}
	}
	// GO-2022-1059 is in x/text/language too, but in symbols the fixture
	// does not call: named, not failed.
	if !strings.Contains(out, "not called (in imported packages or required modules only): ") || !strings.Contains(out, "GO-2022-1059") {
		t.Errorf("the gate does not name the vulnerabilities found but not called:\n%s", out)
	}
}

func TestAnAcceptedVulnerabilityPassesUntilItsExpiry(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	until := now.AddDate(0, 0, 30).Format(time.DateOnly)
	code, out := gate(t, now, "GO-2021-0113 "+until+" the fixture calls it on purpose", "GO-2020-0001 "+until+" not in this module at all")
	if code != 0 {
		t.Fatalf("exit %d with GO-2021-0113 accepted through %s, want 0:\n%s", code, until, out)
	}
	for _, want := range []string{
		"  accepted through " + until + " (line 1): the fixture calls it on purpose\n",
		"GO-2020-0001 is accepted (line 2) but no longer called: remove its entry\n",
		"ok: no called vulnerability (1 accepted)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the gate's output lacks %q:\n%s", want, out)
		}
	}
}

func TestAnAcceptanceFailsAgainTheDayAfterItsExpiry(t *testing.T) {
	t.Parallel()
	// The gate's day is the day after the acceptance's last one.
	now := time.Date(2026, 12, 5, 0, 0, 1, 0, time.UTC)
	code, out := gate(t, now, "GO-2021-0113 2026-12-04 the fixture calls it on purpose")
	if code != 1 {
		t.Fatalf("exit %d with GO-2021-0113 accepted through yesterday, want 1:\n%s", code, out)
	}
	if want := "  its acceptance (accepted.txt line 1) expired after 2026-12-04: the fixture calls it on purpose\n"; !strings.Contains(out, want) {
		t.Errorf("the gate's output lacks %q:\n%s", want, out)
	}
	// On its last day it still holds.
	if code, out := gate(t, now.Add(-2*time.Second), "GO-2021-0113 2026-12-04 the fixture calls it on purpose"); code != 0 {
		t.Errorf("exit %d on the acceptance's last day, want 0:\n%s", code, out)
	}
}

func TestAMalformedAcceptedFileIsRefusedNamingItsLine(t *testing.T) {
	t.Parallel()
	const today = "2026-12-04"
	for _, c := range []struct{ name, file, want string }{
		{"an entry without a reason", "GO-2021-0113 2026-12-31\n", `accepted.txt:1: want "ID EXPIRES REASON"`},
		{"an id that is no Go vulnerability id", "# comment\n\nCVE-2021-38561 2026-12-31 the CVE, not the id\n", `accepted.txt:3: "CVE-2021-38561" is not a Go vulnerability id`},
		{"an expiry that is no date", "GO-2021-0113 31/12/2026 a date in another form\n", `accepted.txt:1: the expiry "31/12/2026" is not a date`},
		{"an expiry more than half a year ahead", "GO-2021-0113 2027-06-06 for ever, nearly\n", "accepted.txt:1: GO-2021-0113 is accepted until 2027-06-06, more than 183 days ahead (at most 2027-06-05)"},
		{"an id named twice", "GO-2021-0113 2026-12-31 one reason\nGO-2021-0113 2026-12-20 another\n", "accepted.txt:2: GO-2021-0113 is accepted already on line 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "accepted.txt")
			if err := os.WriteFile(path, []byte(c.file), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readAccepted(path, today)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("readAccepted: %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestTheGateRefusesOutputItDoesNotUnderstand: a stream without govulncheck's
// config message, or of another protocol, is an error, not an empty scan
// that passes.
func TestTheGateRefusesOutputItDoesNotUnderstand(t *testing.T) {
	t.Parallel()
	for name, stream := range map[string]string{
		"nothing":             "",
		"no config":           `{"finding":{"osv":"GO-2021-0113","trace":[{"module":"m","function":"F"}]}}`,
		"another protocol":    `{"config":{"protocol_version":"v2.0.0"}}`,
		"not JSON at the end": `{"config":{"protocol_version":"v1.0.0"}} Vulnerability #1`,
	} {
		if _, err := readScan(strings.NewReader(stream)); err == nil {
			t.Errorf("%s: readScan accepted %q", name, stream)
		}
	}
}

// TestTheAcceptedFileIsWellFormed: the project's own accepted file reads,
// so that `make check` fails on a finding and not on the file.
func TestTheAcceptedFileIsWellFormed(t *testing.T) {
	t.Parallel()
	if _, err := readAccepted("accepted.txt", time.Now().UTC().Format(time.DateOnly)); err != nil {
		t.Fatal(err)
	}
}

// TestADatabaseWithNoEntryIsRefused: a scan against a folder that is not a
// database, or an empty one, would find nothing and pass.
func TestADatabaseWithNoEntryIsRefused(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	if err := os.MkdirAll(filepath.Join(empty, "index"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, "index", "vulns.json"), []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, db := range []string{t.TempDir(), empty} {
		var out, errs bytes.Buffer
		if code := run([]string{"-govulncheck", "/nonexistent/govulncheck", "-db", db}, &out, &errs, time.Now()); code != 2 || !strings.Contains(errs.String(), db) {
			t.Errorf("a scan against %s: exit %d, %q; want 2 and a sentence naming it", db, code, errs.String())
		}
	}
}
