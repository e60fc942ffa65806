package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clock is a test's clock, advanced by hand.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { c.now = c.now.Add(time.Millisecond); return c.now }

func TestPortholePrunesRotatedFilesPastMaxAgeAndWhatRemainsVerifies(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	c := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var pruned []string
	l, err := Open(Config{Path: tr.log, Key: testKey, Signer: s.priv, CheckpointPath: tr.witness, CheckpointEvery: 5, MaxBytes: 2000, Now: c.Now,
		MaxAge: 24 * time.Hour, OnPruned: func(files []string, err error) {
			if err != nil {
				t.Error(err)
			}
			pruned = append(pruned, files...)
		}})
	if err != nil {
		t.Fatal(err)
	}
	write := func(n int) {
		for i := 0; i < n; i++ {
			if err := l.Write(context.Background(), callRecord("alice", "list_workflows")); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(20) // several files, rotated "today"
	c.now = c.now.Add(48 * time.Hour)
	write(20) // rotations now prune the files of two days ago
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(pruned) == 0 {
		t.Fatal("nothing was pruned")
	}
	for _, f := range pruned {
		if _, err := os.Stat(filepath.Join(filepath.Dir(tr.log), f)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s was reported pruned but is there", f)
		}
	}
	files := tr.files(t)
	v := tr.verify(t, files, VerifyOptions{Keys: ring([][]byte{testKey}, s), Checkpoints: tr.checkpoints(t)})
	if !v.OK() || v.FirstSeq == 1 || !strings.Contains(strings.Join(v.Notes, "\n"), "were pruned, by a signed pruned record") {
		t.Fatalf("after pruning: %+v", v)
	}
	// Without the public key nothing accounts for the missing head.
	wantProblem(t, tr.verify(t, files, VerifyOptions{Keys: ring([][]byte{testKey})}), "not at its genesis")
}

func TestAPrunedRecordSignedByAnotherKeyAccountsForNothing(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	tr.run(t, testKey, s, 30, 10)
	files := tr.files(t)
	// An attacker holding the HMAC key and a key of their own prunes the
	// head of the series.
	mallory := newSigner(t)
	if _, err := Prune(files, time.Now().Add(time.Hour), VerifyOptions{Keys: ring(nil, s)}, testKey, mallory.priv, time.Now()); err != nil {
		t.Fatal(err)
	}
	wantProblem(t, tr.verify(t, tr.files(t), VerifyOptions{Keys: ring([][]byte{testKey}, s)}), "not genuine")
}

func TestPruneRemovesArchivedFilesAndRefusesALiveLog(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	tr.run(t, testKey, s, 30, 10)
	files := tr.files(t)
	// A file's records are all before the time of the last record of the
	// one after it.
	cut, err := lastTime(files[2])
	if err != nil {
		t.Fatal(err)
	}
	removed, err := Prune(files, cut.Add(time.Nanosecond), VerifyOptions{}, testKey, s.priv, time.Now())
	if err != nil || len(removed) != 3 {
		t.Fatalf("Prune removed %v, %v; want the 3 oldest files", removed, err)
	}
	v := tr.verify(t, tr.files(t), VerifyOptions{Keys: ring([][]byte{testKey}, s), Checkpoints: tr.checkpoints(t)})
	if !v.OK() {
		t.Fatalf("after porthole audit prune: %+v", v)
	}

	l, err := Open(Config{Path: tr.log, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := Prune(tr.files(t), time.Now().Add(time.Hour), VerifyOptions{}, testKey, s.priv, time.Now()); !errors.Is(err, ErrPruneLive) {
		t.Fatalf("Prune of a live log: %v", err)
	}
}

// TestASecondWriterOfOneLogIsRefused: two porthole processes appending to
// one file (two replicas on one shared volume) would interleave two chains.
func TestASecondWriterOfOneLogIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(Config{Path: path, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := Open(Config{Path: path, Key: testKey}); !errors.Is(err, ErrLogInUse) {
		t.Fatalf("a second Open: %v", err)
	}
}

// TestARotationThatFailsIsTriedAgain: the file was closed before it was
// renamed, and a rename or create that failed left the log writing to a
// closed file until a restart (found by review).
func TestARotationThatFailsIsTriedAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	l, err := Open(Config{Path: path, Key: testKey, MaxBytes: 1500, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	blocker := path + "." + at.Format(rotatedAtLayout)
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	failed := false
	for i := 0; i < 10; i++ {
		if err := l.Write(context.Background(), callRecord("alice", "list_workflows")); err != nil {
			failed = true
		}
	}
	if !failed {
		t.Fatal("the rotation onto a directory did not fail")
	}
	os.RemoveAll(blocker)
	for i := 0; i < 5; i++ {
		if err := l.Write(context.Background(), callRecord("alice", "list_workflows")); err != nil {
			t.Fatalf("after the cause was gone: %v", err)
		}
	}
	if _, err := os.Stat(blocker); err != nil {
		t.Fatalf("the log did not rotate once it could: %v", err)
	}
}

// TestPruneRefusesFilesThatLeaveOutTheSeriesEnd: `porthole audit prune
// audit.log.*` left out audit.log, wrote its pruned record into the newest
// rotated file with the sequence number of audit.log's anchor, and broke
// the chain (found by review), live or archived.
func TestPruneRefusesFilesThatLeaveOutTheSeriesEnd(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	tr.run(t, testKey, s, 30, 10)
	rotated, _, err := rotatedFiles(tr.log)
	if err != nil || len(rotated) < 3 {
		t.Fatalf("rotated %v, %v", rotated, err)
	}
	if _, err := Prune(rotated, time.Now().Add(time.Hour), VerifyOptions{Keys: ring(nil, s)}, testKey, s.priv, time.Now()); !errors.Is(err, ErrPruneNotWhole) {
		t.Fatalf("Prune of audit.log.* alone: %v", err)
	}
	if v := tr.verify(t, tr.files(t), VerifyOptions{Keys: ring([][]byte{testKey}, s), Checkpoints: tr.checkpoints(t)}); !v.OK() {
		t.Fatalf("the refused prune broke the series: %+v", v)
	}
}
