package tokens

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// The cost of a lookup among 50 principals; `make bench-links` runs it.

func BenchmarkBearerLookup(b *testing.B) {
	file := filepath.Join(b.TempDir(), "tokens")
	var last string
	for i := 0; i < 50; i++ {
		last, _ = Append(file, fmt.Sprintf("principal-%d", i))
	}
	set, err := Load(file)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := set.Lookup(last, now); err != nil {
			b.Fatal("lookup failed")
		}
	}
}
