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
	for _, c := range []struct {
		name string
		r    *Redactor
	}{{"credentials", r}, {"personal-data-too", r.WithPersonal(PersonalKinds...)}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if _, n := c.r.JSON(doc); n != 0 {
					b.Fatal(n)
				}
			}
		})
	}
}

// BenchmarkRedactLogTextWithSecrets1MiB: the same megabyte as plain text,
// with a JWT, a GitHub token, URL credentials, an e-mail address and a card
// number every 16 KiB, every detector on: the reading past the fast path.
func BenchmarkRedactLogTextWithSecrets1MiB(b *testing.B) {
	text := benchLogText(1 << 20)
	var s strings.Builder
	for i := 0; i < len(text); i += 16 << 10 {
		s.WriteString(text[i:min(len(text), i+16<<10)])
		s.WriteString("\nauth eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXZhbHVlLXgx ghp_0123456789abcdefghijABCDEFGHIJ012345 postgres://app:hunter2hunter2@db/orders alice@example.com 4111 1111 1111 1111\n")
	}
	doc := s.String()
	r, _ := New("tmprl-api-key-0123456789abcdef")
	r = r.WithPersonal(PersonalKinds...)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, n := r.String(doc); n == 0 {
			b.Fatal("nothing redacted")
		}
	}
}
