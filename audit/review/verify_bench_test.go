package review

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/audittest"
)

// BenchmarkVerify verifies, with its HMAC key, a 32 MB log of call and
// result records of about 1 KB as porthole's writer writes them; MB/s is
// of the log's bytes (docs/performance.md, Verifying and reporting a big trail).
func BenchmarkVerify(b *testing.B) {
	path := writeBenchTrail(b, 32<<20)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	ring := audit.NewKeyring([][]byte{audittest.Key}, nil)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		v, err := VerifyWith([]string{path}, VerifyOptions{Keys: ring})
		if err != nil || !v.OK() {
			b.Fatalf("verify: %v %+v", err, v.Problem)
		}
	}
}

// writeBenchTrail writes a log of at least size bytes (and at most a call,
// its result and the close record more) with porthole's writer under
// testKey: calls with a query and a long identifier among their arguments,
// each followed by its result.
func writeBenchTrail(b testing.TB, size int64) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "audit.log")
	l, err := audit.Open(audit.Config{Path: path, Key: audittest.Key, Fsync: audit.FsyncInterval})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	long := strings.Repeat("w", 700)
	for i := 0; ; i++ {
		// The file's own size, not an estimate of each record's: a
		// record's length depends on its fields and on the writer.
		if st, err := os.Stat(path); err != nil {
			b.Fatal(err)
		} else if st.Size() >= size {
			break
		}
		id := strconv.Itoa(i)
		call := audittest.CallRecord("alice", "describe_workflow",
			audit.Arg{Name: "query", Value: `WorkflowType = "order" AND ExecutionStatus = 'Running'`},
			audit.Arg{Name: "workflowId", Value: long + id})
		call.RequestID = id
		result := audit.Record{Kind: audit.KindResult, RequestID: id, Principal: "alice", Transport: "http", Method: "tools/call", Tool: "describe_workflow",
			Outcome: audit.OutcomeOK, Duration: 1234567, ResultBytes: 2048}
		for _, r := range []audit.Record{call, result} {
			if err := l.Write(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkLineHashes is the ceiling BenchmarkVerify is held to: the two
// SHA-256 passes every line takes (its link hash and its HMAC) over 1 KB,
// with nothing else.
func BenchmarkLineHashes(b *testing.B) {
	line := []byte(strings.Repeat("x", 1024))
	mac := hmac.New(sha256.New, audittest.Key)
	var sum [sha256.Size]byte
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		sum = sha256.Sum256(line)
		mac.Reset()
		mac.Write(line)
		mac.Sum(sum[:0])
	}
}
