package audit

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkAuditRecord writes call records to a real file with the default
// fsync policy: one write(2) per record.
func BenchmarkAuditRecord(b *testing.B) {
	l, err := Open(Config{Path: filepath.Join(b.TempDir(), "audit.log"), Key: testKey})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	rec := callRecord("alice", "list_workflows", Arg{Name: "query", Value: "ExecutionStatus = 'Running'"}, Arg{Name: "pageSize", Value: "50"})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Write(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
}
