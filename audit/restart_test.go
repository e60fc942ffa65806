package audit

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The review of #18 found each case below by running it; each test fails
// on the code it reviewed.

// sealBody seals a body an attacker made, with key.
func sealBody(key []byte, body string) []byte {
	return seal(hmac.New(sha256.New, key), []byte(body))
}

// TestTheLogIsOnDiskBeforeItsWitness: a witness ahead of its log, after a
// power loss, makes the restart claim records missing that were not lost.
func TestTheLogIsOnDiskBeforeItsWitness(t *testing.T) {
	t.Parallel()
	priv := newSigningKey(t)
	sink := &memSink{}
	wf, _ := os.OpenFile(filepath.Join(t.TempDir(), "checkpoints"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	var syncs []int
	l := newLog(Config{Key: testKey, Signer: priv, CheckpointEvery: 3, SyncInterval: time.Hour, OnCheckpoint: func(Checkpoint, error) {
		sink.mu.Lock()
		syncs = append(syncs, sink.syncs)
		sink.mu.Unlock()
	}}, sink, false, 0, "")
	l.chain, l.witness = "c", wf
	go l.loop()
	for i := 0; i < 3; i++ {
		l.Write(context.Background(), callRecord("alice", "x"))
	}
	l.Close()
	if len(syncs) != 2 || syncs[0] < 1 || syncs[1] <= syncs[0] {
		t.Fatalf("log syncs done when each checkpoint was witnessed: %v", syncs)
	}
}

// TestAWitnessNeedsAFileLog: a chain on a stream starts anew at each start,
// and a witness of the last one made every start claim records missing.
func TestAWitnessNeedsAFileLog(t *testing.T) {
	t.Parallel()
	priv := newSigningKey(t)
	if _, err := Open(Config{Path: "stderr", Key: testKey, Signer: priv, CheckpointPath: filepath.Join(t.TempDir(), "w")}); err == nil {
		t.Fatal("a witness of a stream was accepted")
	}
}

// newSigningKey makes a checkpoint signing key as porthole audit keygen
// does.
func newSigningKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	privPEM, _, err := GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := ParseSigningKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}
