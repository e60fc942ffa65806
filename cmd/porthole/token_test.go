package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/gateway/tokens"
)

func TestTokenNewExpiresWritesAnExpiryTheStoreReads(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, expires string
		lifetime      time.Duration
	}{
		{"90d is ninety days from now", "90d", 90 * 24 * time.Hour},
		{"12h is twelve hours from now", "12h", 12 * time.Hour},
		{"36500d, a hundred years, is the most", "36500d", 36500 * 24 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "tokens")
			var stdout, stderr bytes.Buffer
			if code := run([]string{"token", "new", "--name", "alice", "--expires", c.expires, "--tokens-file", file}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			want := time.Now().Add(c.lifetime)
			set, err := tokens.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			got := set.Entries()
			if len(got) != 1 || got[0].Name != "alice" || got[0].Expires.Sub(want).Abs() > time.Minute {
				t.Fatalf("the file holds %+v; want alice expiring at %v (within a minute)", got, want)
			}
			token := strings.TrimSpace(stdout.String())
			if name, err := set.Lookup(token, time.Now()); err != nil || name != "alice" {
				t.Fatalf("the printed token: %q, %v", name, err)
			}
			if _, err := set.Lookup(token, want.Add(time.Minute)); err == nil {
				t.Fatal("the printed token was admitted past its expiry")
			}
			if !strings.Contains(stderr.String(), "expires at "+got[0].Expires.Format(time.RFC3339)) {
				t.Errorf("stderr %q does not say when the token expires", stderr.String())
			}
		})
	}
}

// A bearer secret that never expires outlives the reason it was made: a
// token expires in 90 days unless the operator says otherwise, and one
// that never expires takes the word never.
func TestTokenNewExpiresIn90DaysByDefault(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	var stdout, stderr bytes.Buffer
	before := time.Now().UTC()
	if code := run([]string{"token", "new", "--name", "alice", "--tokens-file", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	set, err := tokens.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	e := set.Entries()[0]
	if want := before.Add(90 * 24 * time.Hour); e.Expires.Before(want.Add(-time.Second)) || e.Expires.After(want.Add(time.Minute)) {
		t.Fatalf("a token made without --expires expires at %s; want 90 days from now (%s)", e.Expires, want)
	}
	if !strings.Contains(stderr.String(), "it expires at ") {
		t.Errorf("stderr %q does not say when the token expires", stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"token", "new", "--name", "bob", "--expires", "never", "--tokens-file", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	raw, _ := os.ReadFile(file)
	if lines := strings.Split(strings.TrimSpace(string(raw)), "\n"); len(strings.Fields(lines[1])) != 2 {
		t.Fatalf("--expires never wrote %q; want a name and a digest only", lines[1])
	}
	if !strings.Contains(stderr.String(), "it never expires") {
		t.Errorf("stderr %q does not say the token never expires", stderr.String())
	}
}

func TestTokenNewRefusesLifetimesOtherThanWholeHoursOrDays(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, expires, says string }{
		{"minutes are refused, since m reads as months too", "5m", "minutes are refused"},
		{"a negative number of days is refused", "-1d", "not a whole number of hours or days"},
		{"a word is refused", "x", "not a whole number of hours or days"},
		{"zero days is refused", "0d", "not a whole number of hours or days"},
		{"a leading zero is refused", "090d", "not a whole number of hours or days"},
		{"a number without a unit is refused", "90", "not a whole number of hours or days"},
		{"a unit without a number is refused", "d", "not a whole number of hours or days"},
		{"a fraction is refused", "1.5d", "not a whole number of hours or days"},
		{"a plus sign is refused", "+1d", "not a whole number of hours or days"},
		{"a sum of units is refused", "1d12h", "not a whole number of hours or days"},
		{"weeks are refused", "2w", "not a whole number of hours or days"},
		{"years are refused", "1y", "not a whole number of hours or days"},
		{"seconds are refused", "3600s", "not a whole number of hours or days"},
		{"a unit in capitals is refused", "90D", "not a whole number of hours or days"},
		{"more than a hundred years is refused", "36501d", "more than 100 years"},
		{"a number past int64 is refused", "99999999999999999999h", "more than 100 years"},
		{"an empty --expires is refused, not read as never", "", "not a whole number of hours or days"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "tokens")
			var stdout, stderr bytes.Buffer
			args := []string{"token", "new", "--name", "alice", "--expires", c.expires, "--tokens-file", file}
			if code := run(args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.says) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), c.says)
			}
			if stdout.Len() != 0 {
				t.Errorf("a token was printed: %q", stdout.String())
			}
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				t.Errorf("the tokens file was created: %v", err)
			}
		})
	}
}

func TestTokenListShowsNamesAndExpiriesNeverDigests(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	content := "# tokens\n" +
		"carol " + tokens.Digest("c") + " expires=2999-01-01T00:00:00Z\n" +
		"alice " + tokens.Digest("a") + "\n" +
		"bob " + tokens.Digest("b") + " expires=2001-01-01T00:00:00Z\n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"token", "list", "--tokens-file", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want := "" +
		"PRINCIPAL  EXPIRES\n" +
		"alice      never\n" +
		"bob        2001-01-01T00:00:00Z  expired\n" +
		"carol      2999-01-01T00:00:00Z\n"
	if stdout.String() != want {
		t.Fatalf("token list printed\n%s\nwant\n%s", stdout.String(), want)
	}

	if err := os.WriteFile(file, []byte(content+"dave "+tokens.Digest("d")+" expires=soon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"token", "list", "--tokens-file", file}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "line 5") || stdout.Len() != 0 {
		t.Fatalf("a file serve would refuse: exit %d, stdout %q, stderr %q; want 1 and the line named", code, stdout.String(), stderr.String())
	}
}
