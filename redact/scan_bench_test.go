package redact

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchLogText is n bytes of log lines with names, numbers and times, as
// the bench's upstream answers.
func benchLogText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "2026-12-01T10:%02d:%02d.%03dZ worker-%d activity ChargeCard attempt %d of order-%06d completed in %d ms on task queue orders\n",
			i/60%60, i%60, i%1000, i%7, i%3+1, i, 20+i%90)
	}
	return b.String()[:n]
}

// BenchmarkRedactCleanLogText1MiB: a megabyte of log lines, as JSON,
// with nothing to redact, and an exact secret known: the fast path alone.
func BenchmarkRedactCleanLogText1MiB(b *testing.B) {
	doc, _ := json.Marshal(map[string]string{"text": benchLogText(1 << 20)})
	r, _ := New("tmprl-api-key-0123456789abcdef")
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, n := r.JSON(doc); n != 0 {
			b.Fatal(n)
		}
	}
}
