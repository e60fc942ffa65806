package audit

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The review of #18 found each case below by running it; each test fails
// on the code it reviewed.

// sealBody seals a body an attacker made, with key.
func sealBody(key []byte, body string) []byte {
	return seal(hmac.New(sha256.New, key), []byte(body))
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

func firstRecordAfter(t *testing.T, path string, n int) Entry {
	t.Helper()
	lines := readLines(t, path)
	e, err := parseLineKey(bytes.TrimSuffix(lines[n], []byte("\n")), nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestAChainStartCannotJumpOverTheLatestCheckpoint: records 13 to the
// latest checkpoint deleted, and a chain-start that skips to after it (one
// shaped as version 1 writes them, or a second genesis at a file's start):
// verify called the series proven complete to the checkpoint it skipped.
func TestAChainStartCannotJumpOverTheLatestCheckpoint(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	tr.maxBytes = 0
	tr.run(t, testKey, s, 30, 10)
	cps := tr.checkpoints(t)
	latest, chain := cps[len(cps)-1].Seq, cps[0].Chain
	lines := readLines(t, tr.log)
	kept := bytes.Join(lines[:12], nil)
	keys := ring([][]byte{testKey}, s)

	v1Shaped := sealBody(testKey, fmt.Sprintf(`{"time":"2026-12-01T10:00:00Z","seq":%d,"prev":"%s","kind":"chain-start","reason":"a torn line"}`, latest+1, lineHash(lines[11])))
	os.WriteFile(tr.log, append(bytes.Clone(kept), v1Shaped...), 0o600)
	wantProblem(t, tr.verify(t, []string{tr.log}, VerifyOptions{Keys: keys, Checkpoints: cps}), "without a schema version after one with")

	genesis := sealBody(testKey, fmt.Sprintf(`{"time":"2026-12-01T10:00:00Z","seq":%d,"prev":"","v":2,"kid":"%s","kind":"chain-start","reason":"a new audit log","chain":"%s"}`, latest+1, KeyID(testKey), chain))
	os.WriteFile(tr.log, kept, 0o600)
	second := tr.log + ".2"
	os.WriteFile(second, genesis, 0o600)
	wantProblem(t, tr.verify(t, []string{tr.log, second}, VerifyOptions{Keys: keys, Checkpoints: cps}), "second genesis")
}

// TestAnUpgradedLogKeepsItsChainAcrossRestarts: a log written by version 1
// was given a chain at its first start after the upgrade, and a new one at
// every start after (only the file's first line was read for it).
func TestAnUpgradedLogKeepsItsChainAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, _ := filepath.Glob("testdata/v1/audit.log*")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600)
	}
	key, _ := os.ReadFile("testdata/v1/audit.key")
	for i := 0; i < 3; i++ {
		l, err := Open(Config{Path: filepath.Join(dir, "audit.log"), Key: key})
		if err != nil {
			t.Fatal(err)
		}
		l.Write(context.Background(), callRecord("alice", "list_workflows"))
		l.Close()
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "audit.log*"))
	if v, _ := VerifyWith(paths, VerifyOptions{Keys: NewKeyring([][]byte{key}, nil)}); !v.OK() {
		t.Fatalf("an upgraded log after three starts: %+v", v)
	}
}

// TestCheckpointsOfOtherReplicasAreSetAside: a reviewer collects every
// replica's checkpoint lines from one cluster's operations log.
func TestCheckpointsOfOtherReplicasAreSetAside(t *testing.T) {
	t.Parallel()
	s := newSigner(t)
	a, b := newTrail(t), newTrail(t)
	a.run(t, testKey, s, 30, 10)
	b.run(t, testKey, s, 33, 10)
	all := append(a.checkpoints(t), b.checkpoints(t)...)
	v := a.verify(t, a.files(t), VerifyOptions{Keys: ring(nil, s), Checkpoints: all})
	if !v.OK() || v.ProvenTo == 0 || !strings.Contains(strings.Join(v.Notes, "\n"), "set aside") {
		t.Fatalf("replica A against the cluster's checkpoints: %+v", v)
	}
}

// TestAWitnessFileServesOneWriter: two replicas given one witness file.
func TestAWitnessFileServesOneWriter(t *testing.T) {
	t.Parallel()
	s := newSigner(t)
	a, b := newTrail(t), newTrail(t)
	la, err := Open(Config{Path: a.log, Key: testKey, Signer: s.priv, CheckpointPath: a.witness})
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	if _, err := Open(Config{Path: b.log, Key: testKey, Signer: s.priv, CheckpointPath: a.witness}); err == nil || !strings.Contains(err.Error(), "locking the audit checkpoint file") {
		t.Fatalf("a second writer of one witness: %v", err)
	}
}

// TestATornWitnessLineDoesNotStopARestart: a witness write cut short, then
// two restarts: the torn line, ended by the first, made the second refuse
// to start, and verify refuse the witness.
func TestATornWitnessLineDoesNotStopARestart(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	tr.run(t, testKey, s, 5, 4)
	f, _ := os.OpenFile(tr.witness, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte(`{"chain":"abc","seq":1`))
	f.Close()
	tr.run(t, testKey, s, 5, 4)
	tr.run(t, testKey, s, 5, 4)
	cps, skipped, err := ReadCheckpoints(tr.witness)
	if err != nil || len(skipped) != 1 {
		t.Fatalf("ReadCheckpoints: %d read, skipped %v, %v", len(cps), skipped, err)
	}
	if v := tr.verify(t, tr.files(t), VerifyOptions{Keys: ring([][]byte{testKey}, s), Checkpoints: cps}); !v.OK() || v.ProvenTo == 0 {
		t.Fatalf("verify: %+v", v)
	}
}

// TestTheLogIsOnDiskBeforeItsWitness: a witness ahead of its log, after a
// power loss, makes the restart claim records missing that were not lost.
func TestTheLogIsOnDiskBeforeItsWitness(t *testing.T) {
	t.Parallel()
	s := newSigner(t)
	sink := &memSink{}
	wf, _ := os.OpenFile(filepath.Join(t.TempDir(), "checkpoints"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	var syncs []int
	l := newLog(Config{Key: testKey, Signer: s.priv, CheckpointEvery: 3, SyncInterval: time.Hour, OnCheckpoint: func(Checkpoint, error) {
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

// TestACutFoundAfterTheSigningKeyWasRotatedIsNamed: the restart after a
// rotation of the signing key read only checkpoints its new key verified,
// and so reused the sequence numbers of the cut records.
func TestACutFoundAfterTheSigningKeyWasRotatedIsNamed(t *testing.T) {
	t.Parallel()
	old, nu := newSigner(t), newSigner(t)
	tr := newTrail(t)
	tr.maxBytes = 0
	tr.run(t, testKey, old, 10, 5)
	cps := tr.checkpoints(t)
	lines := readLines(t, tr.log)
	os.WriteFile(tr.log, bytes.Join(lines[:len(lines)-8], nil), 0o600)
	tr.run(t, testKey, nu, 3, 5)
	e := firstRecordAfter(t, tr.log, len(lines)-8)
	if e.Kind != KindChainStart || e.MissingTo != cps[len(cps)-1].Seq || e.Seq != e.MissingTo+1 {
		t.Fatalf("after the restart: seq %d %s missing %d..%d (witnessed %d)", e.Seq, e.Kind, e.MissingFrom, e.MissingTo, cps[len(cps)-1].Seq)
	}
}

// TestALostCurrentFileContinuesAfterTheNewestRotatedFile: a crash after a
// rotation, then the current file lost: the restart began at the witness's
// seq and claimed records missing that the rotated files hold, and reused
// their sequence numbers.
func TestALostCurrentFileContinuesAfterTheNewestRotatedFile(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	tr.run(t, testKey, s, 2, 1000)
	l, err := Open(Config{Path: tr.log, Key: testKey, Signer: s.priv, CheckpointPath: tr.witness, MaxBytes: 3000})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		l.Write(context.Background(), callRecord("alice", "list_workflows"))
	}
	files := tr.files(t)
	rotatedLast := lastSeqOf(t, files[len(files)-2])
	l.Close()
	os.Remove(tr.log)
	tr.run(t, testKey, s, 1, 1000)
	e := firstRecordAfter(t, tr.log, 0)
	if e.Seq <= rotatedLast || e.MissingTo != 0 && e.MissingFrom <= rotatedLast {
		t.Fatalf("rotated files hold up to seq %d; the new file begins at seq %d, missing %d..%d", rotatedLast, e.Seq, e.MissingFrom, e.MissingTo)
	}
}

// TestAWitnessNeedsAFileLog: a chain on a stream starts anew at each start,
// and a witness of the last one made every start claim records missing.
func TestAWitnessNeedsAFileLog(t *testing.T) {
	t.Parallel()
	s := newSigner(t)
	if _, err := Open(Config{Path: "stderr", Key: testKey, Signer: s.priv, CheckpointPath: filepath.Join(t.TempDir(), "w")}); err == nil {
		t.Fatal("a witness of a stream was accepted")
	}
}

// TestALastRecordLongerThanTheTailIsReadWhole: a record longer than the
// 64 KiB the restart reads made it start a chain at the witness's seq and
// name records missing that were there. ArgsFromJSON's budget keeps a
// call's record far shorter now; this one is built with arguments of
// control characters directly, as any record the writer accepts.
func TestALastRecordLongerThanTheTailIsReadWhole(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	tr.maxBytes = 0
	tr.run(t, testKey, s, 3, 1000)
	v := strings.Repeat("\x01", 4000)
	args := CallArgs{Args: []Arg{{Name: "a", Value: v}, {Name: "b", Value: v}, {Name: "c", Value: v}, {Name: "d", Value: v}}}
	l, err := Open(Config{Path: tr.log, Key: testKey, Signer: s.priv, CheckpointPath: tr.witness})
	if err != nil {
		t.Fatal(err)
	}
	rec := callRecord("alice", "list_workflows")
	rec.Args = args.Args
	if err := l.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, tr.log)
	if len(lines[len(lines)-1]) < 64<<10 {
		t.Fatalf("the record is %d bytes", len(lines[len(lines)-1]))
	}
	l.Close()
	tr.run(t, testKey, s, 1, 1000)
	if v := tr.verify(t, []string{tr.log}, VerifyOptions{Keys: ring([][]byte{testKey}, s), Checkpoints: tr.checkpoints(t)}); !v.OK() {
		t.Fatalf("after a restart behind a long record: %+v", v)
	}
}

// TestVerifyingFromACheckpointPastAnAcknowledgedTornLine: a torn line
// before the checkpoint named, acknowledged by a restart, was held and
// reported as an edit.
func TestVerifyingFromACheckpointPastAnAcknowledgedTornLine(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	tr.maxBytes = 0
	tr.run(t, testKey, s, 3, 4)
	f, _ := os.OpenFile(tr.log, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte(`{"time":"2026-12-01T10:00:00Z","seq":`))
	f.Close()
	tr.run(t, testKey, s, 6, 4)
	cps := tr.checkpoints(t)
	from := cps[len(cps)-2].Seq
	if v := tr.verify(t, []string{tr.log}, VerifyOptions{Keys: ring([][]byte{testKey}, s), Checkpoints: cps, FromCheckpoint: from}); !v.OK() {
		t.Fatalf("--from-checkpoint %d: %+v", from, v)
	}
}
