package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
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
