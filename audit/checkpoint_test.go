package audit_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/audittest"
)

func TestCheckpointsAreWrittenOnAnIntervalWhenRecordsWereWritten(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	var got []audit.Checkpoint
	done := make(chan struct{}, 10)
	l, err := audit.Open(audit.Config{Path: tr.Log, Key: audittest.Key, Signer: s.Priv, CheckpointPath: tr.Witness, CheckpointInterval: 50 * time.Millisecond, SyncInterval: 10 * time.Millisecond,
		OnCheckpoint: func(c audit.Checkpoint, err error) {
			if err != nil {
				t.Error(err)
			}
			got = append(got, c)
			done <- struct{}{}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(context.Background(), audittest.CallRecord("alice", "list_workflows")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("no checkpoint within 5s of a record")
	}
	l.Close()
	if len(got) != 2 || got[0].Seq != 2 { // the genesis and the call; then the close
		t.Fatalf("checkpoints %+v", got)
	}
	if cps := tr.Checkpoints(t); len(cps) != 2 || cps[1] != got[1] {
		t.Fatalf("the witness holds %+v, OnCheckpoint saw %+v", cps, got)
	}
}

func lastSeqOf(t *testing.T, path string) uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return audit.LastSeq(bytes.Split(bytes.TrimSpace(b), []byte("\n")))
}

// TestAWitnessThatCannotBeWrittenIsCounted: a failed witness write was
// only a line of the operations log (found by review).
func TestAWitnessThatCannotBeWrittenIsCounted(t *testing.T) {
	t.Parallel()
	s, tr := audittest.NewSigner(t), audittest.NewTrail(t)
	l, err := audit.Open(audit.Config{Path: tr.Log, Key: audittest.Key, Signer: s.Priv, CheckpointPath: tr.Witness, CheckpointEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	audit.CloseWitness(l) // every later write to it fails
	for i := 0; i < 4; i++ {
		if err := l.Write(context.Background(), audittest.CallRecord("alice", "x")); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if n := l.Stats().WitnessFailures; n == 0 {
		t.Fatal("no witness failure counted")
	}
}
