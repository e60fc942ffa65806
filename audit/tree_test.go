package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	flog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit/merkle"
	"github.com/porthole-dev/porthole/audit/witness"
)

const testOrigin = "porthole.example.com/audit/porthole-0"

// treeLog opens a log at path with a Merkle tree under testOrigin,
// checkpointing every three records.
func treeLog(t *testing.T, path string, priv ed25519.PrivateKey) (*Log, error) {
	t.Helper()
	return Open(Config{Path: path, Key: bytes.Repeat([]byte("k"), 32), Signer: priv, Origin: testOrigin, CheckpointEvery: 3, CheckpointPath: path + ".checkpoints"})
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
	// A note's signature line begins with an em dash: escaped, so that a
	// checkpoint record is printable ASCII as every record is.
	for i, c := range must(os.ReadFile(path)) {
		if (c < 0x20 || c > 0x7e) && c != '\n' {
			t.Fatalf("byte %d of the log is %#x", i, c)
		}
	}
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
	// A power loss takes the log's last writes, and the checkpoints
	// appended after them, which are only appended once the log is synced.
	lines := bytes.SplitAfter(must(os.ReadFile(path)), []byte("\n"))
	if err := os.WriteFile(path, bytes.Join(lines[:len(lines)-3], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".checkpoints", nil, 0o600); err != nil {
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

// checkNoteLines holds every tree note among lines to the tree of the
// records before it, as verify does: a line that is no record (a torn
// write) is no leaf, and a note's size is its checkpoint's seq.
func checkNoteLines(t *testing.T, lines [][]byte, pub ed25519.PublicKey) int {
	t.Helper()
	ring := NewKeyring(nil, []ed25519.PublicKey{pub})
	var f merkle.Frontier
	var beforeAnchor *merkle.Checkpoint
	notes := 0
	for _, line := range lines {
		e, err := ParseLineKey(line, nil)
		if err != nil {
			continue
		}
		if c := e.Checkpoint; c != nil && c.Note != "" {
			cp, err := ring.OpenNote(c.Note)
			atAnchor := beforeAnchor != nil && cp.Size == beforeAnchor.Size && cp.Root == beforeAnchor.Root
			if err != nil || cp.Size != int64(c.Seq) || !atAnchor && (cp.Size != f.Size() || cp.Root != f.Root()) {
				t.Fatalf("the note of checkpoint %d (tree of %d): %v; the records before it: %d", c.Seq, cp.Size, err, f.Size())
			}
			notes++
		}
		if e.Tree != nil {
			edge, err := e.Tree.Frontier()
			if err != nil || edge.Size() != f.Size() || edge.Root() != f.Root() {
				t.Fatalf("the tree edge of record %d (%d records): %v; the records before it: %d", e.Seq, edge.Size(), err, f.Size())
			}
		}
		beforeAnchor = nil
		if e.Kind == KindAnchor {
			beforeAnchor = &merkle.Checkpoint{Size: f.Size(), Root: f.Root()}
		}
		f.Append(line)
	}
	return notes
}

// TestATreesNotesHoldThroughFailedWritesAndFsyncs: writes that fail (one
// leaving a torn line) and an fsync that failed make chain-starts, one of
// them owed when a checkpoint falls due; every note still names the tree
// of exactly the records before it, and its checkpoint's seq. The test
// calls what the loop calls, in the loop's stead.
func TestATreesNotesHoldThroughFailedWritesAndFsyncs(t *testing.T) {
	t.Parallel()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	tree, err := merkle.OpenTree(filepath.Join(t.TempDir(), "audit.log.tree"))
	if err != nil {
		t.Fatal(err)
	}
	s := &memSink{tear: 20}
	l := newLog(Config{Key: testKey, Signer: priv, Origin: testOrigin, CheckpointEvery: 4}, s, false, 0, "")
	l.tree = tree
	write := func(n int) {
		for i := 0; i < n; i++ {
			l.write(callRecord("alice", "list_workflows"))
		}
	}
	write(5)
	s.fail(syscall.EIO) // a torn write, then refusals
	write(2)
	s.fail(nil)
	write(3)
	l.syncLost = true // an interval fsync failed; the chain-start is owed
	if err := l.checkpoint(); err != nil {
		t.Fatal(err)
	}
	write(6)
	if err := l.finish(); err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for _, line := range s.lines() {
		lines = append(lines, []byte(line))
	}
	if n := checkNoteLines(t, lines, pub); n != 2 {
		t.Fatalf("%d notes", n)
	}
	if !strings.Contains(strings.Join(s.lines(), "\n"), "an fsync of the audit sink failed") {
		t.Fatal("no fsync failed")
	}
}

// TestATreesNotesHoldThroughARotationTriedAgain: a rotation that fails is
// tried again at the next record, after a chain-start; the records of
// every file still build the tree every note names.
func TestATreesNotesHoldThroughARotationTriedAgain(t *testing.T) {
	t.Parallel()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	frozen := true // until the rotation may succeed: its file name is taken
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if !frozen {
			at = at.Add(time.Millisecond) // a name of its own for each rotation
		}
		return at
	}
	l, err := Open(Config{Path: path, Key: testKey, MaxBytes: 1500, Now: now, Signer: priv, Origin: testOrigin, CheckpointEvery: 3, CheckpointPath: filepath.Join(t.TempDir(), "checkpoints")})
	if err != nil {
		t.Fatal(err)
	}
	blocker := path + "." + at.Format(rotatedAtLayout)
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	failed := false
	for i := 0; i < 10; i++ {
		failed = l.Write(context.Background(), callRecord("alice", "list_workflows")) != nil || failed
	}
	if !failed {
		t.Fatal("the rotation onto a directory did not fail")
	}
	os.RemoveAll(blocker)
	mu.Lock()
	frozen = false
	mu.Unlock()
	for i := 0; i < 12; i++ {
		if err := l.Write(context.Background(), callRecord("alice", "list_workflows")); err != nil {
			t.Fatalf("after the cause was gone: %v", err)
		}
	}
	l.Close()
	files, _, err := rotatedFiles(path)
	if err != nil || len(files) < 2 {
		t.Fatalf("%d rotated files: %v", len(files), err)
	}
	var lines [][]byte
	for _, f := range append(files, path) {
		lines = append(lines, bytes.Split(bytes.TrimSuffix(must(os.ReadFile(f)), []byte("\n")), []byte("\n"))...)
	}
	if n := checkNoteLines(t, lines, pub); n < 4 {
		t.Fatalf("%d notes", n)
	}
}

// FuzzATreeEdgeDecodesOrIsRefused: a tree edge as a record holds it (any
// size, any strings) is a Frontier of that size, or refused; never a
// panic.
func FuzzATreeEdgeDecodesOrIsRefused(f *testing.F) {
	f.Add(uint64(3), strings.Repeat("ab", 32), strings.Repeat("cd", 32))
	f.Add(uint64(1), strings.Repeat("ab", 40), "")
	f.Fuzz(func(t *testing.T, size uint64, a, b string) {
		e := TreeEdge{Size: size, Edges: []string{a, b}}
		fr, err := e.Frontier()
		if err == nil && uint64(fr.Size()) != size {
			t.Fatalf("an edge of %d records read as one of %d", size, fr.Size())
		}
	})
}

// TestWitnessesCosignTheTreesCheckpointsAndAQuorumIsHeld: a log kept as a
// tree sends each checkpoint to its witnesses, which cosign it; with a
// quorum of two and a maximum lag, calls go on while two keep up (one of
// three is down), and are refused once a second one stops, with the
// problem said; every cosignature is kept.
func TestWitnessesCosignTheTreesCheckpointsAndAQuorumIsHeld(t *testing.T) {
	t.Parallel()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	vkey, _ := merkle.VerifierKey(testOrigin, pub)
	var ws []witness.Witness
	var servers []*httptest.Server
	for i, name := range []string{"w.example/1", "w.example/2", "w.example/down"} {
		skey, wkey, err := witness.GenerateKey(name)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := witness.NewVerifier(wkey)
		url := "http://127.0.0.1:1"
		if i < 2 {
			c, _ := witness.NewCosigner(skey, nil)
			s, err := witness.NewServer(c, []string{vkey}, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(s.Handler())
			t.Cleanup(srv.Close)
			servers, url = append(servers, srv), srv.URL
		}
		ws = append(ws, witness.Witness{URL: url, Verifier: v})
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(Config{Path: path, Key: testKey, Signer: priv, Origin: testOrigin, CheckpointEvery: 2, CheckpointPath: path + ".checkpoints",
		Witnesses: ws, WitnessQuorum: 2, WitnessMaxLag: 300 * time.Millisecond, SyncInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	caughtUp := func() int {
		got := 0
		for _, s := range l.Witnesses() {
			if s.Size > 0 && s.Behind == 0 {
				got++
			}
		}
		return got
	}
	writeCalls(t, l, 5)
	waitFor(t, "two witnesses cosign every checkpoint", func() bool { return caughtUp() == 2 })
	time.Sleep(400 * time.Millisecond)
	writeCalls(t, l, 2) // the one down lags, the quorum holds

	servers[1].Close()
	l.Write(context.Background(), callRecord("alice", "list_workflows"))
	waitFor(t, "calls refused", func() bool {
		return errors.Is(l.Write(context.Background(), callRecord("alice", "list_workflows")), ErrUnavailable)
	})
	if p := l.Problem(); !strings.Contains(p, "1 of the 2 witnesses needed") || !strings.Contains(p, "w.example/2") {
		t.Fatalf("the problem: %q", p)
	}
	lines := bytes.Count(must(os.ReadFile(path+CosignaturesSuffix)), []byte("\n"))
	if lines < 4 {
		t.Fatalf("%d cosignatures kept", lines)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
