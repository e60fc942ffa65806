package tokens

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// at is a time in the expiry's layout, for the tables.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(expiryLayout, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestATokenIsRefusedFromItsExpiryOn(t *testing.T) {
	t.Parallel()
	file := "alice " + Digest("a") + " expires=2027-03-01T00:00:00Z\n" +
		"bob   " + Digest("b") + "\n"
	set, err := Parse(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, token, now string
		want             string // the principal, or "" when refused
		expired          bool
	}{
		{"a token before its expiry is admitted", "a", "2027-02-28T23:59:59Z", "alice", false},
		{"a token at its expiry is refused as expired", "a", "2027-03-01T00:00:00Z", "", true},
		{"a token past its expiry is refused as expired", "a", "2030-01-01T00:00:00Z", "", true},
		{"a line without an expiry is admitted in any year", "b", "9999-12-31T23:59:59Z", "bob", false},
		{"an unknown token is refused as unknown, not expired", "c", "2000-01-01T00:00:00Z", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := set.Lookup(c.token, at(t, c.now))
			if got != c.want {
				t.Errorf("Lookup = %q, %v; want %q", got, err, c.want)
			}
			if c.want != "" {
				return
			}
			if errors.Is(err, ErrExpiredToken) != c.expired || errors.Is(err, ErrUnknownToken) == c.expired {
				t.Errorf("Lookup refused with %v; want expired %v", err, c.expired)
			}
			if c.expired && (!strings.Contains(err.Error(), "principal alice") || !strings.Contains(err.Error(), "2027-03-01T00:00:00Z")) {
				t.Errorf("the refusal %q does not name the principal and the expiry", err)
			}
		})
	}
}

func TestMalformedExpiriesAreRefusedNamingTheLine(t *testing.T) {
	t.Parallel()
	for name, expiry := range map[string]string{
		"an expiry with an offset":              "expires=2027-03-01T01:00:00+01:00",
		"an expiry with fractional seconds":     "expires=2027-03-01T00:00:00.5Z",
		"an expiry without a zone":              "expires=2027-03-01T00:00:00",
		"an expiry with a lower-case z":         "expires=2027-03-01T00:00:00z",
		"a date without a time":                 "expires=2027-03-01",
		"a date that does not exist":            "expires=2027-02-30T00:00:00Z",
		"an empty expiry":                       "expires=",
		"a time without expires=":               "2027-03-01T00:00:00Z",
		"expires in capitals":                   "EXPIRES=2027-03-01T00:00:00Z",
		"a duration rather than a time":         "expires=90d",
		"two expiries":                          "expires=2027-03-01T00:00:00Z expires=2028-03-01T00:00:00Z",
		"Go's zero time, which would mean none": "expires=0001-01-01T00:00:00Z",
	} {
		content := "# tokens\nbob " + Digest("b") + "\nalice " + Digest("a") + " " + expiry + "\n"
		if _, err := Parse(strings.NewReader(content)); err == nil {
			t.Errorf("%s was accepted", name)
		} else if !strings.Contains(err.Error(), "line 3") {
			t.Errorf("%s: refusal %q does not name line 3", name, err)
		}
	}
}

// TestAReloadPicksUpAChangedExpiry: an expiry written into the file takes
// effect at the next reload, and one taken out too; a malformed expiry at a
// reload keeps the tokens in force, and at the start refuses the file.
func TestAReloadPicksUpAChangedExpiry(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tokens")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	line := "alice " + Digest("a")
	write(line + " expires=2999-01-01T00:00:00Z\n")
	s, err := OpenStore(path, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	lookup := func() error { _, err := s.Current().Lookup("a", time.Now()); return err }
	if err := lookup(); err != nil {
		t.Fatalf("a token expiring in 2999: %v", err)
	}

	write(line + " expires=2001-01-01T00:00:00Z\n")
	if changed, err := s.Reload(); !changed || err != nil {
		t.Fatalf("Reload = %v, %v", changed, err)
	}
	if err := lookup(); !errors.Is(err, ErrExpiredToken) {
		t.Fatalf("after the expiry moved into the past: %v; want expired", err)
	}

	write(line + " expires=tomorrow\n")
	if _, err := s.Reload(); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("Reload of a malformed expiry = %v; want a refusal naming line 1", err)
	}
	if err := lookup(); !errors.Is(err, ErrExpiredToken) || s.Problem() != ProblemUnparseable {
		t.Fatalf("after a malformed expiry: %v, problem %q; want the last good set (expired), said", err, s.Problem())
	}

	write(line + "\n")
	if _, err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := lookup(); err != nil {
		t.Fatalf("after the expiry was taken out: %v", err)
	}

	write(line + " expires=tomorrow\n")
	if _, err := OpenStore(path, zap.NewNop()); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("OpenStore of a malformed expiry = %v; want a refusal naming line 1", err)
	}
}

func TestAppendExpiringWritesAnExpiryTheStoreReads(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tokens")
	expires := time.Date(2027, 3, 1, 12, 30, 45, 999_000_000, time.FixedZone("CET", 3600))
	token, err := AppendExpiring(path, "alice", expires)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if want := "alice " + Digest(token) + " expires=2027-03-01T11:30:45Z\n"; string(raw) != want {
		t.Fatalf("the file holds %q; want %q (UTC, cut to the second)", raw, want)
	}
	set, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Entries(); len(got) != 1 || !got[0].Expires.Equal(expires.Truncate(time.Second)) {
		t.Fatalf("Entries = %+v; want alice expiring at %v", got, expires)
	}

	if _, err := AppendExpiring(path, "bob", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil {
		t.Fatal("an expiry in year 10000, which the file cannot hold, was written")
	}
	if after, _ := os.ReadFile(path); string(after) != string(raw) {
		t.Fatalf("a refused expiry changed the file to %q", after)
	}
}

func TestEntriesAreSortedByName(t *testing.T) {
	t.Parallel()
	set, err := Parse(strings.NewReader("carol " + Digest("c") + "\nalice " + Digest("a") + " expires=2027-03-01T00:00:00Z\nbob " + Digest("b") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := set.Entries()
	want := []Entry{{"alice", at(t, "2027-03-01T00:00:00Z")}, {"bob", time.Time{}}, {"carol", time.Time{}}}
	if len(got) != len(want) {
		t.Fatalf("Entries = %+v", got)
	}
	for i := range want {
		if got[i].Name != want[i].Name || !got[i].Expires.Equal(want[i].Expires) {
			t.Errorf("Entries[%d] = %+v; want %+v", i, got[i], want[i])
		}
	}
}

// TestAPortholeBeforeExpiriesRefusesALineWithOne: a rollback to a porthole
// before expiries must drop them, as the CHANGELOG says; it refuses the
// file, naming the line, rather than admitting the token for ever. A file
// this porthole writes without expiries still reads there.
func TestAPortholeBeforeExpiriesRefusesALineWithOne(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tokens")
	if _, err := Append(path, "alice"); err != nil {
		t.Fatal(err)
	}
	plain, _ := os.ReadFile(path)
	if names, _, err := parseBeforeExpiries(strings.NewReader(string(plain))); err != nil || len(names) != 1 {
		t.Fatalf("a file without expiries, before expiries: %v, %v", names, err)
	}
	if _, err := AppendExpiring(path, "bob", time.Now().Add(90*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	withExpiry, _ := os.ReadFile(path)
	_, _, err := parseBeforeExpiries(strings.NewReader(string(withExpiry)))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("a file with an expiry, before expiries: %v; want refused at line 2", err)
	}
}

// A token within 14 days of its expiry is told once a day, each, in the
// operations log, and counted for the metric; one further off, one that
// never expires and one already expired are neither.
func TestATokenNearItsExpiryIsToldOncePerDay(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "tokens")
	lines := "soon " + Digest("a") + " expires=" + now.Add(3*24*time.Hour).Format(time.RFC3339) + "\n" +
		"later " + Digest("b") + " expires=" + now.Add(30*24*time.Hour).Format(time.RFC3339) + "\n" +
		"gone " + Digest("c") + " expires=" + now.Add(-time.Hour).Format(time.RFC3339) + "\n" +
		"forever " + Digest("d") + "\n"
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	s, err := OpenStore(path, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	told := func() []string {
		var names []string
		for _, e := range logs.TakeAll() {
			if e.Message == "a token expires soon: make its holder a new one" {
				names = append(names, e.ContextMap()["principal"].(string))
			}
		}
		return names
	}
	s.TellExpiring(now)
	if got := told(); len(got) != 1 || got[0] != "soon" {
		t.Fatalf("told of %v; want soon alone", got)
	}
	s.TellExpiring(now.Add(23 * time.Hour))
	if got := told(); len(got) != 0 {
		t.Fatalf("told again within the day: %v", got)
	}
	s.TellExpiring(now.Add(24 * time.Hour))
	if got := told(); len(got) != 1 {
		t.Fatalf("a day later, told of %v; want soon again", got)
	}
	if n := s.ExpiringWithin(now, Expiring); n != 1 {
		t.Fatalf("ExpiringWithin = %d; want 1", n)
	}
}
