package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	flog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit/merkle"
)

const testOrigin = "porthole.example.com/audit/porthole-0"

// treeLog opens a log at path with a Merkle tree under testOrigin,
// checkpointing every three records.
func treeLog(t *testing.T, path string, priv ed25519.PrivateKey) (*Log, error) {
	t.Helper()
	return Open(Config{Path: path, Key: bytes.Repeat([]byte("k"), 32), Signer: priv, Origin: testOrigin, CheckpointEvery: 3})
}

func writeCalls(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := l.Write(context.Background(), Record{Kind: KindCall, RequestID: "r", Principal: "alice", Transport: "http", Method: "tools/call", Tool: "describe_namespace"}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkNotes streams the log's lines through a Frontier and checks each
// checkpoint's note, with transparency-dev/formats given only the public
// key: its size is the lines before the checkpoint, its root theirs. It
// returns how many notes it checked.
func checkNotes(t *testing.T, path string, pub ed25519.PublicKey) int {
	t.Helper()
	vkey, err := merkle.VerifierKey(testOrigin, pub)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f merkle.Frontier
	notes := 0
	for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		e, err := ParseLineKey(line, bytes.Repeat([]byte("k"), 32))
		if err == nil && e.Checkpoint != nil && e.Checkpoint.Note != "" {
			cp, _, _, err := flog.ParseCheckpoint([]byte(e.Checkpoint.Note), testOrigin, v)
			root := f.Root()
			if err != nil || int64(cp.Size) != f.Size() || !bytes.Equal(cp.Hash, root[:]) {
				t.Fatalf("the note of checkpoint %d: %v; size %d of %d", e.Checkpoint.Seq, err, cp.Size, f.Size())
			}
			notes++
		}
		f.Append(line)
	}
	return notes
}

// TestATreeLogsCheckpointsAreNotesOfItsRecords: with an origin, every
// checkpoint carries the C2SP note of the Merkle tree of the log's lines
// before it, which transparency-dev/formats opens with the public key
// alone, across a restart; a tree one record behind (a stop between the
// two writes) takes the record at the restart; a tree lost or cut further
// refuses the start, naming what to do.
func TestATreeLogsCheckpointsAreNotesOfItsRecords(t *testing.T) {
	t.Parallel()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := treeLog(t, path, priv)
	if err != nil {
		t.Fatal(err)
	}
	writeCalls(t, l, 10)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	first := checkNotes(t, path, pub)
	if l, err = treeLog(t, path, priv); err != nil {
		t.Fatalf("a restart: %v", err)
	}
	writeCalls(t, l, 7)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := checkNotes(t, path, pub); n <= first || first < 3 {
		t.Fatalf("%d notes, then %d after a restart", first, n)
	}

	// As a power loss may leave them: the tree behind the log by one
	// record, and by many, takes the log's records it lacks; the tree
	// ahead of the log (the log's unsynced tail lost) is cut back to it.
	for _, records := range []func(size int64) int64{
		func(size int64) int64 { return size - 1 },
		func(size int64) int64 { return 3 },
	} {
		tree, err := merkle.OpenTree(path + TreeSuffix)
		if err != nil {
			t.Fatal(err)
		}
		size := tree.Size()
		tree.Close()
		if err := os.Truncate(path+TreeSuffix, 32*tlog.StoredHashCount(records(size))); err != nil {
			t.Fatal(err)
		}
		if l, err = treeLog(t, path, priv); err != nil {
			t.Fatalf("a tree of %d of the log's %d records: %v", records(size), size, err)
		}
		writeCalls(t, l, 4)
		l.Close()
		checkNotes(t, path, pub)
	}
	lines := bytes.SplitAfter(must(os.ReadFile(path)), []byte("\n"))
	if err := os.WriteFile(path, bytes.Join(lines[:len(lines)-3], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err = treeLog(t, path, priv); err != nil {
		t.Fatalf("a tree ahead of its log: %v", err)
	}
	writeCalls(t, l, 2)
	l.Close()
	checkNotes(t, path, pub)

	// Another log's tree, and none, are refused: the series cannot go on.
	other := filepath.Join(t.TempDir(), "audit.log")
	ol, err := treeLog(t, other, priv)
	if err != nil {
		t.Fatal(err)
	}
	writeCalls(t, ol, 40)
	ol.Close()
	if err := os.Rename(other+TreeSuffix, path+TreeSuffix); err != nil {
		t.Fatal(err)
	}
	if _, err := treeLog(t, path, priv); err == nil || !strings.Contains(err.Error(), "retire origin") {
		t.Fatalf("another log's tree: %v", err)
	}
	if err := os.Remove(path + TreeSuffix); err != nil {
		t.Fatal(err)
	}
	if _, err := treeLog(t, path, priv); err == nil || !strings.Contains(err.Error(), "has records but no tree") {
		t.Fatalf("a lost tree was started afresh under the old origin: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestALogCutBelowItsCheckpointFileCannotGoOnUnderItsOrigin: a log shorter
// than the latest checkpoint its checkpoint file holds goes on, without an
// origin, after a chain-start naming the hole; under an origin the series
// cannot hold a hole, and the start is refused.
func TestALogCutBelowItsCheckpointFileCannotGoOnUnderItsOrigin(t *testing.T) {
	t.Parallel()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	path, cps := filepath.Join(t.TempDir(), "audit.log"), filepath.Join(t.TempDir(), "checkpoints")
	cfg := Config{Path: path, Key: bytes.Repeat([]byte("k"), 32), Signer: priv, Origin: testOrigin, CheckpointEvery: 3, CheckpointPath: cps}
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeCalls(t, l, 10)
	l.Close()
	lines := bytes.SplitAfter(must(os.ReadFile(path)), []byte("\n"))
	if err := os.WriteFile(path, bytes.Join(lines[:len(lines)-6], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "cannot go on with a hole") {
		t.Fatalf("a log cut below its checkpoint file: %v", err)
	}
}
