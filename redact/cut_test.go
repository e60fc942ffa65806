package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// cutAPIKey is an exact secret with hyphens in it, 42 characters, as the
// Temporal API key is.
const cutAPIKey = "tmprl-api-key-0123456789abcdefghijklmnopqr"

// TestACutLeavesNoStartOfASecret: whatever the cut lands in, what is kept
// ends in no 8 characters that begin a secret, and holds at most n bytes.
func TestACutLeavesNoStartOfASecret(t *testing.T) {
	t.Parallel()
	r, _ := New(cutAPIKey)
	token := "ghp_" + strings.Repeat("a1B2", 9)
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
	cases := []struct {
		name, in, mustNot string
		n                 int
	}{
		{"a GitHub token across the cap", strings.Repeat("a", 500) + " " + token, "ghp_a1B2", 512},
		{"a GitHub token glued to an underscore, which its detector does not take whole", strings.Repeat("a", 500) + " " + token + "_ci", "ghp_a1B2", 512},
		{"the start of a token too short to be one", strings.Repeat("a", 500) + " ghp_" + strings.Repeat("Q", 30) + "!", "ghp_QQQQ", 512},
		{"an AWS access key id across the cap", strings.Repeat("a", 500) + " AKIAIOSFODNN7EXAMPLE", "AKIAIOSF", 512},
		{"a JWT across the cap", strings.Repeat("a", 500) + " " + jwt, "eyJhbGci", 512},
		{"the header and payload of a JWT, without its signature", strings.Repeat("a", 490) + " " + jwt[:41] + "!", "eyJhbGci", 512},
		{"the exact API key across the cap", strings.Repeat("a", 500) + " " + cutAPIKey + " tail", cutAPIKey[:8], 512},
		{"the start of the API key the text holds only part of", strings.Repeat("a", 490) + " " + cutAPIKey[:30] + "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", cutAPIKey[:8], 512},
		{"a token start that the room for the marker exposes", strings.Repeat("x", 225) + " ghp_" + strings.Repeat("Q", 14) + " " + cutAPIKey[:12] + "@" + strings.Repeat("z", 40), "ghp_QQQQ", 256},
		{"a token start the key's hyphen had stopped", strings.Repeat("x", 220) + " ghp_" + strings.Repeat("Q", 19) + cutAPIKey[:14] + strings.Repeat("z", 40), "ghp_QQQQ", 256},
		{"a cap shorter than the marker", "ab ghp_" + strings.Repeat("Q", 30), "ghp_QQQQ", 12},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, _, cut := r.Cut(tc.in, tc.n)
			if !cut || len(got) > tc.n {
				t.Fatalf("cut %v, %d bytes of at most %d: %q", cut, len(got), tc.n, got)
			}
			if strings.Contains(got, tc.mustNot) {
				t.Fatalf("%q shows %q", got[max(0, len(got)-80):], tc.mustNot)
			}
			if head := strings.TrimSuffix(got, PartialMarker); r.TrailingPartial(head) != len(head) {
				t.Fatalf("%q still ends in the start of a secret", got[max(0, len(got)-80):])
			}
		})
	}
}

// TestACutCountsWhatItReplaced: a secret in the window is counted whether
// or not the cut keeps its marker, and a start the cut left is one more.
func TestACutCountsWhatItReplaced(t *testing.T) {
	t.Parallel()
	r, _ := New(cutAPIKey)
	in := cutAPIKey + " " + strings.Repeat("a", 100) + " AKIAIOSFODNN7EXAMPLE"
	got, n, cut := r.Cut(in, 40)
	if got != "[REDACTED:secret] "+strings.Repeat("a", 22) || n != 2 || !cut {
		t.Errorf("Cut = %q, %d, %v; want the key's marker, then a's, two redactions, cut", got, n, cut)
	}
	got, n, _ = r.Cut(strings.Repeat("a", 30)+" ghp_"+strings.Repeat("Q", 30)+"!", 50)
	if got != strings.Repeat("a", 30)+" "+PartialMarker || n != 1 {
		t.Errorf("Cut = %q, %d; want the a's, the partial marker and one redaction", got, n)
	}
}

// TestOrdinaryValuesAreOnlyCut: long workflow ids, UUIDs and names with
// hyphens, digits and underscores are cut at the cap and nothing of them is
// taken for a secret.
func TestOrdinaryValuesAreOnlyCut(t *testing.T) {
	t.Parallel()
	r, _ := New(cutAPIKey)
	for _, s := range []string{
		"order-2026-12-01-" + strings.Repeat("customer-12345-", 60),
		"01a23124-537a-7ae8-ac1a-36fa81312375" + strings.Repeat("-retry-7", 80),
		strings.Repeat("0f8b3c2e-6a1d-4e5f-9b7a-2c4d6e8f0a1b ", 20),
		"graph_builder_" + strings.Repeat("stage_0001_", 60),
		"PaymentsWorkflowV2_" + strings.Repeat("keyJar", 100),
		"tenant-ASIA-" + strings.Repeat("customer-12345-", 60),
		"billing/AIDA-cruise-" + strings.Repeat("leg-", 160),
		strings.Repeat("build-", 84) + "wf_ghp_job_12345678",
	} {
		for _, n := range []int{0, 1, 128, 256, 512} {
			got, count, cut := r.Cut(s, n)
			if got != s[:n] || count != 0 || !cut {
				t.Errorf("Cut(%.40q…, %d) = %q, %d, %v; want the first %d bytes only", s, n, got, count, cut, n)
			}
		}
	}
}

// TestAValueThatFitsIsRedactedAndNotCut: a value within the cap is
// redacted in full; a marker longer than its secret can make it too long,
// and then it is cut like any other.
func TestAValueThatFitsIsRedactedAndNotCut(t *testing.T) {
	t.Parallel()
	r, _ := New()
	if got, n, cut := r.Cut("key AKIAIOSFODNN7EXAMPLE", 64); got != "key [REDACTED:aws-access-key-id]" || n != 1 || cut {
		t.Errorf("Cut = %q, %d, %v", got, n, cut)
	}
	if got, _, cut := r.Cut("key AKIAIOSFODNN7EXAMPLE", 24); got != "key [REDACTED:aws-access" || !cut {
		t.Errorf("a marker that makes the value too long: Cut = %q, %v", got, cut)
	}
	if got, n, cut := r.Cut("", 10); got != "" || n != 0 || cut {
		t.Errorf("Cut of nothing = %q, %d, %v", got, n, cut)
	}
}

// TestACutReadsABoundedWindow: a secret far past the cap is never read, so
// it is not counted and changes nothing of what is kept, however long the
// value; one within the window is read and counted.
func TestACutReadsABoundedWindow(t *testing.T) {
	t.Parallel()
	r, _ := New(cutAPIKey)
	filler := strings.Repeat("word ", 1<<20) // 5 MiB
	clean, cleanCount, _ := r.Cut(filler, 512)
	far := filler[:3<<20] + cutAPIKey + " ghp_" + strings.Repeat("a1B2", 9) + filler[3<<20:]
	got, count, cut := r.Cut(far, 512)
	if got != clean || count != cleanCount || count != 0 || !cut {
		t.Errorf("secrets 3 MiB in changed the cut: %d redactions, %q", count, got[max(0, len(got)-40):])
	}
	near := filler[:512+CutWindow-100] + cutAPIKey + filler[512+CutWindow-100:]
	if _, count, _ := r.Cut(near, 512); count != 1 {
		t.Errorf("a secret within the window was counted %d times, want 1", count)
	}
	past := filler[:512+CutWindow+1] + cutAPIKey + filler[512+CutWindow+1:]
	if _, count, _ := r.Cut(past, 512); count != 0 {
		t.Errorf("a secret just past the window was counted %d times, want 0", count)
	}
}

// TestTheWindowGrowsWhileMarkersShortenIt: a value of long secrets, each
// replaced by a short marker, is read further until, redacted, it reaches
// past the cut, and the cut shows none of them. Of secrets of 1001 bytes
// and a space each, the first window (1000 bytes and CutWindow) holds 17,
// which redact to 656 bytes; the second, twice as long, holds 34 and the
// start of the 35th, which the cut keeps and the partial marker replaces.
func TestTheWindowGrowsWhileMarkersShortenIt(t *testing.T) {
	t.Parallel()
	long := "BEGINLONG" + strings.Repeat("0123456789abcdef", 62)
	r, _ := New(long)
	got, count, cut := r.Cut(strings.Repeat(long+" ", 100), 1000)
	if want := strings.Repeat("[REDACTED:secret] ", 34) + PartialMarker; got != want || count != 35 || !cut {
		t.Errorf("Cut = %d bytes, %d redactions, cut %v: %q", len(got), count, cut, got[max(0, len(got)-60):])
	}
}

// TestACutNeverSplitsACharacter: what is kept is valid UTF-8 when the
// value is, wherever the cap falls in a character.
func TestACutNeverSplitsACharacter(t *testing.T) {
	t.Parallel()
	r, _ := New()
	s := strings.Repeat("é€😀a", 100)
	for n := range 64 {
		got, _, _ := r.Cut(s, n)
		if len(got) > n || !utf8.ValidString(got) || !strings.HasPrefix(s, got) || n-len(got) >= utf8.UTFMax {
			t.Errorf("Cut at %d = %q", n, got)
		}
	}
}

// TestANilRedactorCutsAndKnowsNoExactSecret: a nil *Redactor is safe; like
// String, it still has its detectors.
func TestANilRedactorCutsAndKnowsNoExactSecret(t *testing.T) {
	t.Parallel()
	var r *Redactor
	if got, n, cut := r.Cut(strings.Repeat("a", 20)+cutAPIKey, 30); got != strings.Repeat("a", 20)+cutAPIKey[:10] || n != 0 || !cut {
		t.Errorf("Cut = %q, %d, %v", got, n, cut)
	}
	if got, _, _ := r.Cut(strings.Repeat("a", 30)+" ghp_"+strings.Repeat("Q", 30)+"!", 50); got != strings.Repeat("a", 30)+" "+PartialMarker {
		t.Errorf("Cut = %q", got)
	}
}

// FuzzCut holds Cut to its promises on any text and cap: at most n bytes,
// valid UTF-8 when the text is, the whole text redacted when it was not
// cut, and no start of a secret at the end of what a cut kept.
func FuzzCut(f *testing.F) {
	f.Add(strings.Repeat("a", 40)+" ghp_"+strings.Repeat("Q", 30), 50)
	f.Add("x "+cutAPIKey[:20]+" AKIAIOSFODNN7EXAMPLE é", 30)
	f.Add("Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0", 12)
	r, _ := New(cutAPIKey)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 1 << 10
		got, _, cut := r.Cut(s, n)
		if len(got) > max(n, 0) || utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Cut(%q, %d) = %q", s, n, got)
		}
		if whole, _ := r.String(s); !cut && got != whole {
			t.Fatalf("Cut(%q, %d) = %q without cutting; String gives %q", s, n, got, whole)
		}
		if head := strings.TrimSuffix(got, PartialMarker); cut && r.TrailingPartial(head) != len(head) {
			t.Fatalf("Cut(%q, %d) = %q, which ends in the start of a secret", s, n, got)
		}
	})
}
