package redact

import (
	"bytes"
	"testing"
)

func TestLineWriterRedactsEachLineAndKeepsItsEnd(t *testing.T) {
	t.Parallel()
	r, _ := New("exact-secret-value-1234")
	var out bytes.Buffer
	lw := NewLineWriter(&out, r)
	lines := []string{
		`{"msg":"dialing","key":"exact-secret-value-1234"}` + "\n",
		"plain text with AKIAIOSFODNN7EXAMPLE\n",
		`{"msg":"nothing to hide"}` + "\n",
	}
	for _, l := range lines {
		if n, err := lw.Write([]byte(l)); err != nil || n != len(l) {
			t.Fatalf("Write = %d, %v; want %d", n, err, len(l))
		}
	}
	want := `{"msg":"dialing","key":"[REDACTED:secret]"}` + "\n" +
		"plain text with [REDACTED:aws-access-key-id]\n" +
		`{"msg":"nothing to hide"}` + "\n"
	if out.String() != want {
		t.Fatalf("wrote %q, want %q", out.String(), want)
	}
}
