package audit

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"testing"
)

// BenchmarkAuditRecord writes call records to a real file with the default
// fsync policy: one write(2) per record.
func BenchmarkAuditRecord(b *testing.B) {
	benchRecords(b, Config{Path: filepath.Join(b.TempDir(), "audit.log"), Key: testKey})
}

// BenchmarkAuditRecordWithCheckpoints is the same with a signing key and a
// witness file at the default cadence: a signed checkpoint, a record and a
// synced append every 1000 records.
func BenchmarkAuditRecordWithCheckpoints(b *testing.B) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	benchRecords(b, Config{Path: filepath.Join(b.TempDir(), "audit.log"), Key: testKey, Signer: priv, CheckpointPath: filepath.Join(b.TempDir(), "checkpoints")})
}

func benchRecords(b *testing.B, cfg Config) {
	l, err := Open(cfg)
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
