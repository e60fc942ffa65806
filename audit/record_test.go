package audit

import (
	"strings"
	"testing"
)

// FuzzQuotedSizeIsWhatTheRecordWrites holds quotedSize, which budgets count
// with, to the bytes the encoder writes for the same string.
func FuzzQuotedSizeIsWhatTheRecordWrites(f *testing.F) {
	for _, s := range []string{"", "plain", `"\`, "\a\b\f\n\r\t\v\x00\x1f\x7f", "é東\U0001F600", "\xff\xc3", "\u2028\uFEFF\U000E0049", strings.Repeat("\x01", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := quotedSize(s), len(appendString(nil, Quote(s))); got != want {
			t.Fatalf("quotedSize(%q) = %d; the record writes %d bytes", s, got, want)
		}
	})
}
