package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// maxAcceptance is the furthest ahead an acceptance may expire: an
// accepted vulnerability is looked at again at least this often.
const maxAcceptance = 183 * 24 * time.Hour

// Acceptance is one line of the accepted file: a called vulnerability the
// project has decided to live with until Expires, for Reason.
type Acceptance struct {
	ID      string
	Expires string // YYYY-MM-DD, the last day (UTC) the acceptance holds
	Reason  string
	Line    int
}

var vulnID = regexp.MustCompile(`^GO-\d{4}-\d{4,}$`)

// readAccepted reads the accepted file: one entry a line, "ID EXPIRES
// REASON", blank lines and lines starting with # passed over. Every line
// that is not an entry is an error naming its line, and so is an id
// named twice, an expiry that is no date, and one further ahead than
// maxAcceptance from today.
func readAccepted(path, today string) ([]Acceptance, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	limit := mustDate(today).Add(maxAcceptance).Format(time.DateOnly)
	var out []Acceptance
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want \"ID EXPIRES REASON\" (GO-2026-1234 2027-01-31 why it is accepted), got %q", path, n, line)
		}
		a := Acceptance{ID: fields[0], Expires: fields[1], Reason: strings.Join(fields[2:], " "), Line: n}
		if !vulnID.MatchString(a.ID) {
			return nil, fmt.Errorf("%s:%d: %q is not a Go vulnerability id (GO-YYYY-NNNN)", path, n, a.ID)
		}
		if _, err := time.Parse(time.DateOnly, a.Expires); err != nil {
			return nil, fmt.Errorf("%s:%d: the expiry %q is not a date (YYYY-MM-DD)", path, n, a.Expires)
		}
		if a.Expires > limit {
			return nil, fmt.Errorf("%s:%d: %s is accepted until %s, more than %d days ahead (at most %s)", path, n, a.ID, a.Expires, maxAcceptance/(24*time.Hour), limit)
		}
		if first, dup := seen[a.ID]; dup {
			return nil, fmt.Errorf("%s:%d: %s is accepted already on line %d", path, n, a.ID, first)
		}
		seen[a.ID] = n
		out = append(out, a)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

func mustDate(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}
