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
	} {
		if got, want := q.EscapeIdentifier(id), quote.New(nil).EscapeIdentifier(id); got != want {
			t.Errorf("an ordinary id changed at its cut:\n got %q\nwant %q", got[200:], want[200:])
		}
		if short := id[:100]; q.EscapeIdentifier(short) != short {
			t.Errorf("an ordinary id under the cap changed: %q", short)
		}
	}
}
