package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/porthole-dev/porthole/gateway/tokens"
)

const tokenUsage = "porthole token new --name NAME [--expires 90d|never] --tokens-file FILE, or porthole token list --tokens-file FILE"

const tokenNewSummary = `Make a new token for the principal NAME, append NAME and the token's SHA-256
and when it expires to the tokens file (created with mode
0600 if missing), and print the token once on stdout. porthole keeps only the
digest: a lost token cannot be recovered, only replaced.

--expires is a whole number of hours or days, such as 12h or 90d, at most
100 years: the token is refused from that long after now, to the second, and
the file says when in UTC. Without --expires the token expires in 90 days;
--expires never makes one that never does.
Minutes, and every other unit, are refused: 5m reads as five months as
easily as five minutes, and weeks and years are whole days (7d, 365d).`

const tokenListSummary = `List the principals of the tokens file, sorted by name, with when each token
expires (UTC, or "never"), marking those expired now. Digests are not shown:
they are not secret, but they tell a reader nothing. The file is read as
porthole serve reads it: one it would refuse is refused, naming the line.`

func runToken(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, tokenUsage)
	}
	switch args[0] {
	case "new":
		return runTokenNew(args[1:], stdout, stderr)
	case "list":
		return runTokenList(args[1:], stdout, stderr)
	}
	return fmt.Errorf("%w: %s", errUsage, tokenUsage)
}

func runTokenNew(args []string, stdout, stderr io.Writer) error {
	var name, file, expires string
	s := newSettings("token new", tokenNewSummary, stderr)
	s.fs.StringVar(&name, "name", "", "the principal's name, as it will appear in logs and audit records")
	s.fs.StringVar(&expires, "expires", defaultLifetime, "how long the token is valid: 12h or 90d, or never")
	s.string(&file, "tokens-file", "PORTHOLE_TOKENS_FILE", "", "the tokens file to append to")
	if err := s.parse(args); err != nil {
		return err
	}
	if name == "" || file == "" {
		return fmt.Errorf("%w: both --name and --tokens-file are required", errUsage)
	}
	var at time.Time
	// Only the word never makes a token that never expires: an --expires
	// given empty (a script's unset variable) is refused, never read as
	// that, nor as the default.
	if expires != "never" {
		lifetime, err := parseLifetime(expires)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		at = time.Now().Add(lifetime).UTC().Truncate(time.Second)
	}
	token, err := tokens.AppendExpiring(file, name, at)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, token)
	until := "never expires"
	if !at.IsZero() {
		until = "expires at " + at.Format(time.RFC3339)
	}
	fmt.Fprintf(stderr, "porthole: appended the digest of a new token for %s to %s; it %s; the token above is shown only once\n", name, file, until)
	return nil
}

// defaultLifetime is a new token's lifetime when --expires is not given:
// a bearer secret that never expires outlives the reason it was made.
const defaultLifetime = "90d"

// maxLifetime bounds --expires so that the expiry is a time the tokens
// file can hold; a token meant to outlive it should not expire at all.
const maxLifetime = 100 * 365 * 24 * time.Hour

// parseLifetime reads --expires: a whole number of hours ("12h") or days
// ("90d"), nothing else. Not time.ParseDuration, which has no days and
// takes "5m" for minutes, fractions, signs and sums ("1h30m").
func parseLifetime(v string) (time.Duration, error) {
	refused := fmt.Errorf("--expires %+q is not a whole number of hours or days, such as 12h or 90d", v)
	digits, unit := v, byte(0)
	if v != "" {
		digits, unit = v[:len(v)-1], v[len(v)-1]
	}
	if digits == "" || digits[0] == '0' || strings.Trim(digits, "0123456789") != "" {
		return 0, refused
	}
	var per time.Duration
	switch unit {
	case 'h':
		per = time.Hour
	case 'd':
		per = 24 * time.Hour
	case 'm':
		return 0, fmt.Errorf("%w (minutes are refused: %s reads as months as easily as minutes)", refused, v)
	default:
		return 0, refused
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > int64(maxLifetime/per) {
		return 0, fmt.Errorf("--expires %s is more than 100 years; --expires never makes a token that does not expire", v)
	}
	return time.Duration(n) * per, nil
}

func runTokenList(args []string, stdout, stderr io.Writer) error {
	var file string
	s := newSettings("token list", tokenListSummary, stderr)
	s.string(&file, "tokens-file", "PORTHOLE_TOKENS_FILE", "", "the tokens file to read")
	if err := s.parse(args); err != nil {
		return err
	}
	if file == "" {
		return fmt.Errorf("%w: --tokens-file is required", errUsage)
	}
	set, err := tokens.Load(file)
	if err != nil {
		return err
	}
	return writeTokenList(stdout, set.Entries(), time.Now())
}

// writeTokenList writes one principal a line: its name, its expiry or
// "never", and "expired" when it has expired at now.
func writeTokenList(w io.Writer, entries []tokens.Entry, now time.Time) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tEXPIRES")
	for _, e := range entries {
		switch {
		case e.Expires.IsZero():
			fmt.Fprintf(tw, "%s\tnever\n", e.Name)
		case e.Expired(now):
			fmt.Fprintf(tw, "%s\t%s\texpired\n", e.Name, e.Expires.Format(time.RFC3339))
		default:
			fmt.Fprintf(tw, "%s\t%s\n", e.Name, e.Expires.Format(time.RFC3339))
		}
	}
	return tw.Flush()
}
