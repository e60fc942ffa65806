package gateway

import (
	"fmt"
	"path/filepath"
	"testing"
)

// The cost of each link alone; `make bench-links` runs them.

func BenchmarkBearerLookup(b *testing.B) {
	file := filepath.Join(b.TempDir(), "tokens")
	var last string
	for i := 0; i < 50; i++ {
		last, _ = AppendToken(file, fmt.Sprintf("principal-%d", i))
	}
	tokens, err := LoadTokens(file)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := tokens.Lookup(last); !ok {
			b.Fatal("lookup failed")
		}
	}
}
