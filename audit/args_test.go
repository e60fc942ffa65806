package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/redact"
)

// TestACallRecordIsBounded: 111,828 arguments once made a 4 MB record for
// one unit of rate limit. A record now holds at most MaxArgs arguments and
// MaxArgsBytes of them; the rest is counted and hashed, and the hash is of
// exactly what was left out.
func TestACallRecordIsBounded(t *testing.T) {
	t.Parallel()
	members := make([]string, 0, 111828)
	for i := range 111828 {
		members = append(members, fmt.Sprintf(`"a%06d":%d`, i, i))
	}
	raw := json.RawMessage("{" + strings.Join(members, ",") + "}")
	got := ArgsFromJSON(raw, nil)
	if len(got.Args) != MaxArgs || got.Omitted != 111828-MaxArgs {
		t.Fatalf("kept %d, omitted %d; want %d and %d", len(got.Args), got.Omitted, MaxArgs, 111828-MaxArgs)
	}
	rest := map[string]json.RawMessage{}
	for i := MaxArgs; i < 111828; i++ {
		rest[fmt.Sprintf("a%06d", i)] = json.RawMessage(fmt.Sprint(i))
	}
	b, _ := json.Marshal(rest)
	sum := sha256.Sum256(b)
	if got.OmittedSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("the omitted digest is not the SHA-256 of the omitted members")
	}
	rec := Record{Kind: KindCall, Args: got.Args, ArgsOmitted: got.Omitted, ArgsOmittedSHA256: got.OmittedSHA256}
	line := rec.appendFields(nil)
	if len(line) > 64<<10 || !strings.Contains(string(line), `"argsOmitted":111796`) {
		t.Fatalf("the record is %d bytes: %.200s", len(line), line)
	}

	big := strings.Repeat("v", MaxArgBytes)
	members = members[:0]
	for i := range 200 {
		members = append(members, fmt.Sprintf(`"%s%03d":%q`, strings.Repeat("k", MaxToolBytes-3), i, big))
	}
	got = ArgsFromJSON(json.RawMessage("{"+strings.Join(members, ",")+"}"), nil)
	size := 0
	for _, a := range got.Args {
		size += len(a.Name) + len(a.Value)
	}
	if size > MaxArgsBytes || got.Omitted == 0 || len(got.Args)+got.Omitted != 200 {
		t.Fatalf("kept %d arguments of %d bytes, omitted %d", len(got.Args), size, got.Omitted)
	}
}

// TestAReasonIsCapped: a reason is porthole's own sentence, but one that
// quotes a client's text is cut at MaxReasonBytes all the same.
func TestAReasonIsCapped(t *testing.T) {
	t.Parallel()
	rec := Record{Kind: KindDenial, Reason: "invalid JSON-RPC: " + strings.Repeat("x", 1<<20)}
	if line := rec.appendFields(nil); len(line) > 2*MaxReasonBytes {
		t.Fatalf("a denial with a 1 MiB reason is %d bytes", len(line))
	}
}

// TestArgumentsAreRedactedBeforeTheyAreCut: a value (or a name) is cut by
// the redactor, not redacted in full and then cut, so the record shows no
// start of a secret at a cut, and says it cut.
func TestArgumentsAreRedactedBeforeTheyAreCut(t *testing.T) {
	t.Parallel()
	r, _ := redact.New()
	token := "ghp_" + strings.Repeat("a1B2", 9)
	pad := strings.Repeat("a", MaxArgBytes-12) // a token after it crosses the cap
	raw, _ := json.Marshal(map[string]string{
		"fits":  "issued " + token,
		token:   "a token sent as a key",
		"glued": pad + " " + token + "_ci",                     // no word boundary after it: not a token whole
		"short": pad + " ghp_" + strings.Repeat("Q", 30) + "!", // too short to be a token
		"whole": pad + " " + token,
	})
	partial := strings.Repeat("a", MaxArgBytes-len(redact.PartialMarker)) + redact.PartialMarker
	want := []Arg{
		{Name: "fits", Value: "issued [REDACTED:github-token]"},
		{Name: "[REDACTED:github-token]", Value: "a token sent as a key"},
		{Name: "glued", Value: partial, Truncated: true},
		{Name: "short", Value: partial, Truncated: true},
		{Name: "whole", Value: pad + " [REDACTED:g", Truncated: true},
	}
	got := ArgsFromJSON(raw, r)
	if len(got.Args) != len(want) {
		t.Fatalf("%d arguments, want %d", len(got.Args), len(want))
	}
	for i, a := range got.Args {
		if a != want[i] {
			t.Errorf("argument %d = %q: %q (truncated %v), want %q: %q (truncated %v)", i, a.Name, a.Value[max(0, len(a.Value)-40):], a.Truncated,
				want[i].Name, want[i].Value[max(0, len(want[i].Value)-40):], want[i].Truncated)
		}
	}
	// The token in fits, the key and whole, and the two starts a cut left.
	if got.Redactions != 5 {
		t.Errorf("%d redactions, want 5", got.Redactions)
	}
}

// TestAnArgumentIsNotRedactedInFull: the redaction of a value reads a
// window past its cap, so a token megabytes into it is not counted, while
// one within the window is.
func TestAnArgumentIsNotRedactedInFull(t *testing.T) {
	t.Parallel()
	r, _ := redact.New()
	filler := strings.Repeat("word ", 1<<18)
	token := " ghp_" + strings.Repeat("a1B2", 9) + " "
	for _, tc := range []struct {
		name string
		at   int
		want int
	}{
		{"a token a megabyte in", 1 << 20, 0},
		{"a token within the window", MaxArgBytes + 1000, 1},
	} {
		raw, _ := json.Marshal(map[string]string{"v": filler[:tc.at] + token + filler[tc.at:]})
		got := ArgsFromJSON(raw, r)
		if got.Redactions != tc.want || !got.Args[0].Truncated || got.Args[0].Value != filler[:MaxArgBytes] {
			t.Errorf("%s: %d redactions (want %d), truncated %v", tc.name, got.Redactions, tc.want, got.Args[0].Truncated)
		}
	}
}

// TestTheOmittedDigestIsOfTheRedactedRest: the arguments left out are
// hashed redacted in full, wherever their secrets lie, not cut.
func TestTheOmittedDigestIsOfTheRedactedRest(t *testing.T) {
	t.Parallel()
	r, _ := redact.New()
	token := " ghp_" + strings.Repeat("a1B2", 9)
	obj := map[string]string{}
	for i := range MaxArgs {
		obj[fmt.Sprintf("a%02d", i)] = "v"
	}
	rest := map[string]string{"b0": token, "b1": strings.Repeat("z", 3*redact.CutWindow) + token}
	maps.Copy(obj, rest)
	raw, _ := json.Marshal(obj)
	got := ArgsFromJSON(raw, r)
	b, _ := json.Marshal(rest)
	red, n := r.String(string(b))
	sum := sha256.Sum256([]byte(red))
	if got.Omitted != 2 || n != 2 || got.OmittedSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("omitted %d; the digest is not of the rest redacted in full", got.Omitted)
	}
}

// TestTheArgumentBudgetCountsMarkers: a record holds at most MaxArgsBytes
// of names and values as it holds them, even where markers make a value
// longer than the client sent it. Here 510 bytes are left for the last
// argument, whose 504 bytes redact to 696; judged on the value as sent, it
// was kept, and the record held more than MaxArgsBytes.
func TestTheArgumentBudgetCountsMarkers(t *testing.T) {
	t.Parallel()
	r, _ := redact.New()
	cost := func(name, value string) int { return quotedSize(name) + quotedSize(value) }
	// The last argument fits the budget as sent, and not once redacted.
	secret := strings.Repeat("AKIAIOSFODNN7EXAMPLE ", 24)
	red, _ := r.String(secret)
	last := cost("a99", secret)
	if cost("a99", red) <= last {
		t.Fatal("the markers do not make the argument longer")
	}
	obj := map[string]string{}
	full := strings.Repeat("w", MaxArgBytes+88) // held as MaxArgBytes bytes
	used := 0
	// Whole arguments, until a filler of at most MaxArgBytes can leave
	// exactly what the last argument costs as sent.
	for i := 0; MaxArgsBytes-used-last-cost("a00", "") > MaxArgBytes; i++ {
		obj[fmt.Sprintf("a%02d", i)] = full
		used += cost("a00", full[:MaxArgBytes])
	}
	kept := len(obj)
	filler := MaxArgsBytes - used - last - cost("a00", "")
	obj[fmt.Sprintf("a%02d", kept)] = strings.Repeat("w", filler)
	obj[fmt.Sprintf("a%02d", kept+1)] = secret
	raw, _ := json.Marshal(obj)
	got := ArgsFromJSON(raw, r)
	size := 0
	for _, a := range got.Args {
		size += cost(a.Name, a.Value)
	}
	if size > MaxArgsBytes || len(got.Args) != kept+1 || got.Omitted != 1 {
		t.Fatalf("kept %d arguments of %d bytes as written, omitted %d; want %d kept", len(got.Args), size, got.Omitted, kept+1)
	}
}

// An argument costs the record what the record writes for it: quoting and
// escaping write a control character as five bytes, so forty arguments of
// them once made a record of 76 KB against a budget of 16 KiB.
func TestAnArgumentCostsWhatTheRecordWritesForIt(t *testing.T) {
	t.Parallel()
	obj := map[string]string{}
	for i := range 40 {
		obj[fmt.Sprintf("\x01\x02%02d", i)] = strings.Repeat("\x01", MaxArgBytes)
	}
	raw, _ := json.Marshal(obj)
	got := ArgsFromJSON(raw, nil)
	rec := Record{Kind: KindCall, Args: got.Args, ArgsOmitted: got.Omitted, ArgsOmittedSHA256: got.OmittedSHA256}
	line := rec.appendFields(nil)
	if got.Omitted == 0 || len(line) > MaxArgsBytes+MaxArgs*64+512 {
		t.Fatalf("the record holds %d arguments in %d bytes, omitting %d", len(got.Args), len(line), got.Omitted)
	}
}
