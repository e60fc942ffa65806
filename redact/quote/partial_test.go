package quote_test

import (
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/redact"
	"github.com/porthole-dev/porthole/redact/quote"
)

// TestACutShowsNoPartOfASecret: the review's cases. A workflow id of 230
// w's then a GitHub token came back cut and unredacted; the exact Temporal
// API key left 22 of its 42 characters; and a cut that leaves the start of
// a secret the text holds only part of shows none of it.
func TestACutShowsNoPartOfASecret(t *testing.T) {
	t.Parallel()
	apiKey := "tmprl-api-key-0123456789abcdefghijklmnopqr" // 42 characters
	red, _ := redact.New(apiKey)
	q := quote.New(red)
	token := "ghp_" + strings.Repeat("a1B2", 9)
	cases := []struct{ name, in, mustNot string }{
		{"a GitHub token across the identifier cap", strings.Repeat("w", 230) + "-" + token, "ghp_a"},
		{"the exact API key across the cap", strings.Repeat("x", 234) + " " + apiKey + " tail", apiKey[:8]},
		{"the start of the API key the text holds only part of", strings.Repeat("x", 240) + " " + apiKey[:22] + "zzzzzzzzzzzzzzzzzzzzzz", apiKey[:8]},
		{"the start of a token too short to be one", strings.Repeat("x", 240) + " ghp_" + strings.Repeat("Q", 30) + "!", "ghp_QQ"},
		{"a JWT cut at its start", strings.Repeat("x", 245) + " eyJhbGciOiJIUzI1NiJ9", "eyJhbGci"},
		{"a token start after a tab, which is escaped", strings.Repeat("x", 230) + "\tghp_" + strings.Repeat("Q", 30) + "!", "ghp_QQ"},
		{"a token start before the start of the API key", " ghp_" + strings.Repeat("a", 200) + apiKey[:21] + strings.Repeat("z", 40), "ghp_aaaa"},
		{"the start of the API key after a token start", strings.Repeat("x", 200) + " ghp_" + strings.Repeat("b", 30) + " " + apiKey[:30] + "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", apiKey[:8]},
	}
	for _, tc := range cases {
		got := q.EscapeIdentifier(tc.in)
		if strings.Contains(got, tc.mustNot) {
			t.Errorf("%s: %q shows %q", tc.name, got[max(0, len(got)-80):], tc.mustNot)
		}
		if len(got) > quote.MaxIdentifierLen+len("…[truncated by porthole]") {
			t.Errorf("%s: %d bytes, over the cap", tc.name, len(got))
		}
	}
}

// TestOrdinaryIdentifiersSurviveACut: long workflow ids, run ids, type names
// and task queues, with hyphens, digits and underscores, are cut as before
// and nothing of them is taken for a secret.
func TestOrdinaryIdentifiersSurviveACut(t *testing.T) {
	t.Parallel()
	red, _ := redact.New("tmprl-api-key-0123456789abcdefghijklmnopqr")
	q := quote.New(red)
	for _, id := range []string{
		"order-2026-12-01-" + strings.Repeat("customer-12345-", 30),
		"graph_builder_" + strings.Repeat("stage_0001_", 30),
		"01a23124-537a-7ae8-ac1a-36fa81312375" + strings.Repeat("-retry-7", 40),
		"PaymentsWorkflowV2_" + strings.Repeat("keyJar", 60),
		"porthole-demo." + strings.Repeat("queue.shard-42.", 30),
		"tenant-ASIA-" + strings.Repeat("customer-12345-", 30),
		"eu.ACCA-ledger-" + strings.Repeat("entry-", 60),
		"billing/AIDA-cruise-" + strings.Repeat("leg-", 80),
		strings.Repeat("sensor-", 40) + "ph_sensor_1-" + strings.Repeat("a", 40),
	} {
		if got, want := q.EscapeIdentifier(id), quote.New(nil).EscapeIdentifier(id); got != want {
			t.Errorf("an ordinary id changed at its cut:\n got %q\nwant %q", got[200:], want[200:])
		}
		if short := id[:100]; q.EscapeIdentifier(short) != short {
			t.Errorf("an ordinary id under the cap changed: %q", short)
		}
	}
}

// TestAWindowThatRedactionShortensStillReachesTheCut: secrets before the cap
// shrink to their markers, so a window of the cap plus its margin can end
// before the cut once redacted. The window grows until it reaches the cut,
// and a URL password just past the margin is still redacted.
func TestAWindowThatRedactionShortensStillReachesTheCut(t *testing.T) {
	t.Parallel()
	red, _ := redact.New()
	q := quote.New(red)
	key := "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat("MIIEpAIBAAKCAQEA7bq98\n", 200) + "-----END RSA PRIVATE KEY-----\n"
	in := "x " + strings.Repeat(key, 4) + strings.Repeat("y", 300) + " https://admin:S3cretPassw0rd@db.internal/x " + strings.Repeat("z", 4000)
	got := q.Of(quote.OriginTemporal, in).Text
	if strings.Contains(got, "S3cretPassw0rd") || !strings.HasSuffix(got, "…[truncated by porthole]") {
		t.Fatalf("%d bytes ending %q; want the password redacted and the cut marked", len(got), got[max(0, len(got)-120):])
	}
}

// TestAPartialSecretIsFoundInTheTextAsWritten: the start of an exact secret
// holding a tab, which an identifier shows as \u0009, is still found at a
// cut: the check reads the text as written, not as escaped.
func TestAPartialSecretIsFoundInTheTextAsWritten(t *testing.T) {
	t.Parallel()
	secret := "abcdefgh\tXYZ0123456789"
	red, _ := redact.New(secret)
	in := strings.Repeat("x", 240) + " " + secret[:14] + strings.Repeat("z", 20)
	got := quote.New(red).EscapeIdentifier(in)
	if strings.Contains(got, "abcdefgh") || !strings.Contains(got, "[REDACTED:partial]") {
		t.Fatalf("%q", got[200:])
	}
}

// TestQuotingCutsAsRedactCutDoes: quoting reads as far past its caps as
// redact.Redactor.Cut does for the audit log's fields, and marks the start
// of a secret a cut left the same way, so that the documents can say it
// once.
func TestQuotingCutsAsRedactCutDoes(t *testing.T) {
	t.Parallel()
	if quote.RedactWindow != redact.CutWindow || quote.PartialMarker != redact.PartialMarker {
		t.Fatalf("quote reads %d bytes past a cut and marks %q; redact.Cut reads %d and marks %q",
			quote.RedactWindow, quote.PartialMarker, redact.CutWindow, redact.PartialMarker)
	}
}

// TestMakingRoomForTheMarkerExposesNoOtherStart: cutting what precedes a
// partial secret to make room for the marker can end in the start of
// another token; that goes too (found by review: an identifier showed
// "ghp_QQQQQQQQ[REDACTED:partial]").
func TestMakingRoomForTheMarkerExposesNoOtherStart(t *testing.T) {
	t.Parallel()
	apiKey := "tmprl-api-key-0123456789abcdefghijklmnopqr"
	red, _ := redact.New(apiKey)
	q := quote.New(red)
	got := q.EscapeIdentifier(strings.Repeat("x", 225) + " ghp_" + strings.Repeat("Q", 14) + " " + apiKey[:12] + "@" + strings.Repeat("z", 40))
	if strings.Contains(got, "ghp_QQQQ") || strings.Contains(got, apiKey[:8]) || !strings.Contains(got, "[REDACTED:partial]") {
		t.Fatalf("EscapeIdentifier = %q", got[200:])
	}
}

// TestAnEscapeBeforeATokenDoesNotHideIt: quoting writes an invisible
// character as \u200B, whose last letter is a word character; a token
// right after it was no longer at a word boundary, and the redaction at
// the wire let it through (found by review). A value quoting escaped is
// redacted first.
func TestAnEscapeBeforeATokenDoesNotHideIt(t *testing.T) {
	t.Parallel()
	red, _ := redact.New()
	q := quote.New(red)
	token := "ghp_" + strings.Repeat("aB3x", 9)
	for _, s := range []string{"\u200b" + token, "\ufeff" + token, "x\x00" + token, "\u200bAKIAIOSFODNN7EXAMPLE", "\u200bBearer abc.def-123456"} {
		for _, out := range []string{q.EscapeIdentifier(s), q.Of(quote.OriginTemporal, s).Text} {
			wire, _ := red.String(out)
			for _, secret := range []string{token, "AKIAIOSFODNN7EXAMPLE", "abc.def-123456"} {
				if strings.Contains(wire, secret) {
					t.Errorf("%q quoted as %q reaches the wire as %q", s, out, wire)
				}
			}
		}
	}
}

// TestInvisibleCharactersThatAreNotFormatCharactersAreEscaped: the
// combining grapheme joiner, variation selectors and Hangul fillers show
// as nothing, and "port\u034fhole" reads as porthole (found by review).
func TestInvisibleCharactersThatAreNotFormatCharactersAreEscaped(t *testing.T) {
	t.Parallel()
	q := quote.New(nil)
	for _, r := range []rune{'\u034f', '\ufe0f', '\u3164', '\uffa0', '\U000E0100'} {
		s := "port" + string(r) + "hole"
		if got := q.Of(quote.OriginTemporal, s).Text; strings.ContainsRune(got, r) {
			t.Errorf("%U stays in %q", r, got)
		}
	}
	v, err := quote.OfJSON(quote.OriginUpstream("docs"), []byte(`{"origin":"port\u034fhole","orig\u034fin":"porthole"}`), 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if out := string(v.Value); strings.Contains(out, `"porthole"`) || strings.ContainsRune(out, '\u034f') || strings.Count(out, "porthole-quoting-upstream:docs") != 2 {
		t.Fatalf("OfJSON = %s", out)
	}
}
