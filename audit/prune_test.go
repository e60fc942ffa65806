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
