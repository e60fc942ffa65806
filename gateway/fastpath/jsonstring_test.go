package fastpath

import (
	"bytes"
	"encoding/json"
	"testing"
)

var stringCases = []string{
	"", "plain", "<script>&amp;</script>", "\u2028\u2029", "\"\\/\b\f\n\r\t\x00\x1f\x7f",
	"\xff\xfe é 😀 \xe2\x80", "line one\nline two\n", "\u202e\u200b",
}

// TestAppendStringIsJSONMarshals: each string is written as json.Marshal
// writes it.
func TestAppendStringIsJSONMarshals(t *testing.T) {
	t.Parallel()
	for _, s := range stringCases {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Errorf("AppendString(%q) = %s, json.Marshal %s", s, got[1:], want)
		}
	}
}

func FuzzAppendStringIsJSONMarshals(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, json.Marshal %s", s, got, want)
		}
	})
}
