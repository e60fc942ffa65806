package tokens

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The cost of a lookup among 1, 50, 10,000 and 100,000 principals, side by
// side; `make bench-links` runs it. A lookup is one digest and one map
// read, whatever the file holds (docs/performance.md).

func BenchmarkBearerLookup(b *testing.B) {
	for _, n := range []int{1, 50, 10_000, 100_000} {
		b.Run(fmt.Sprintf("principals=%d", n), func(b *testing.B) {
			file := filepath.Join(b.TempDir(), "tokens")
			var lines strings.Builder
			for i := 0; i < n-1; i++ {
				token, err := New()
				if err != nil {
					b.Fatal(err)
				}
				lines.WriteString(formatLine(fmt.Sprintf("principal-%d", i), Digest(token), time.Time{}))
			}
			if err := os.WriteFile(file, []byte(lines.String()), 0o600); err != nil {
				b.Fatal(err)
			}
			last, err := Append(file, "the-last-principal")
			if err != nil {
				b.Fatal(err)
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
		})
	}
}
