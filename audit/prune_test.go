package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

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
