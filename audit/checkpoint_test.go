package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// signer is a test's signing key and its public key.
type signer struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

func newSigner(t *testing.T) signer {
	t.Helper()
	privPEM, pubPEM, err := GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := ParseSigningKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	return signer{priv, pub}
}

// trail is one replica's audit log and its witness file, in dirs of their
// own.
type trail struct {
	log, witness string
	maxBytes     int64
}

func newTrail(t *testing.T) trail {
	t.Helper()
	return trail{log: filepath.Join(t.TempDir(), "audit.log"), witness: filepath.Join(t.TempDir(), "checkpoints"), maxBytes: 3000}
}

// run opens the trail's log with key and signer, writes n call and result
// pairs (a checkpoint every `every` records) and closes it.
func (tr trail) run(t *testing.T, key []byte, s signer, n, every int) {
	t.Helper()
	l, err := Open(Config{Path: tr.log, Key: key, Signer: s.priv, CheckpointPath: tr.witness, CheckpointEvery: every, MaxBytes: tr.maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := l.Write(context.Background(), callRecord("alice", "list_workflows", Arg{Name: "pageSize", Value: "5"})); err != nil {
			t.Fatal(err)
		}
		if err := l.Write(context.Background(), Record{Kind: KindResult, Principal: "alice", Tool: "list_workflows", Outcome: OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// files are the trail's log files in chain order, oldest first.
func (tr trail) files(t *testing.T) []string {
	t.Helper()
	paths, _ := filepath.Glob(tr.log + "*")
	v, err := Verify(paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v.Files
}

func (tr trail) checkpoints(t *testing.T) []Checkpoint {
	t.Helper()
	cps, _, err := ReadCheckpoints(tr.witness)
	if err != nil {
		t.Fatal(err)
	}
	return cps
}

func (tr trail) verify(t *testing.T, files []string, opts VerifyOptions) *Verification {
	t.Helper()
	v, err := VerifyWith(files, opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func ring(keys [][]byte, signers ...signer) *Keyring {
	var pubs []ed25519.PublicKey
	for _, s := range signers {
		pubs = append(pubs, s.pub)
	}
	return NewKeyring(keys, pubs)
}

func wantProblem(t *testing.T, v *Verification, what string) {
	t.Helper()
	if v.OK() {
		t.Fatalf("verified, want a problem mentioning %q: %+v", what, v)
	}
	if !strings.Contains(v.Problem.What, what) {
		t.Fatalf("problem %q, want one mentioning %q", v.Problem, what)
	}
}

func TestAWitnessedTrailVerifiesWithThePublicKeyAndIsProvenToItsClose(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	tr.run(t, testKey, s, 20, 7)
	tr.run(t, testKey, s, 5, 7) // a restart
	cps := tr.checkpoints(t)
	v := tr.verify(t, tr.files(t), VerifyOptions{Keys: ring([][]byte{testKey}, s), Checkpoints: cps})
	if !v.OK() || !v.Signed || v.Checkpoints != len(cps) || v.ProvenTo != cps[len(cps)-1].Seq {
		t.Fatalf("Verify = %+v", v)
	}
	// The last checkpoint witnesses the close record: nothing after it
	// is left unproven but the checkpoint record itself (and an anchor,
	// when writing it rotated the file).
	if notes := strings.Join(v.Notes, "\n"); strings.Contains(notes, "cannot be proven") || strings.Contains(notes, "without a close") {
		t.Fatalf("notes: %s", notes)
	}
	// Without the HMAC key, the public key and the witness still prove
	// that nothing up to the checkpoint is missing or changed.
	v = tr.verify(t, tr.files(t), VerifyOptions{Keys: ring(nil, s), Checkpoints: cps})
	if !v.OK() || v.Keyed || v.ProvenTo == 0 {
		t.Fatalf("Verify with the public key alone = %+v", v)
	}
}

// The review's tamper cases (#18), each of which today's main verified or
// only noted.
func TestTamperingWithAWitnessedTrailIsFound(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tamper func(t *testing.T, tr trail, files []string) []string
		what   string
	}{
		{"the head cut (tail -n +11)", func(t *testing.T, tr trail, files []string) []string {
			b, _ := os.ReadFile(files[0])
			lines := bytes.SplitAfter(b, []byte("\n"))
			os.WriteFile(files[0], bytes.Join(lines[3:], nil), 0o600)
			return files
		}, "not at its genesis"},
		{"the first rotated file deleted", func(t *testing.T, tr trail, files []string) []string {
			return files[1:]
		}, "not at its genesis"},
		{"the newest file deleted", func(t *testing.T, tr trail, files []string) []string {
			return files[:len(files)-1]
		}, "are missing: the checkpoint"},
		{"the tail cut", func(t *testing.T, tr trail, files []string) []string {
			last := files[len(files)-1]
			b, _ := os.ReadFile(last)
			lines := bytes.SplitAfter(b, []byte("\n"))
			os.WriteFile(last, bytes.Join(lines[:len(lines)-4], nil), 0o600)
			return files
		}, "are missing: the checkpoint"},
		{"a record edited and the chain rewritten by someone holding the HMAC key", func(t *testing.T, tr trail, files []string) []string {
			rewriteChain(t, files, func(line []byte) []byte { return bytes.Replace(line, []byte(`alice`), []byte(`mallory`), 1) })
			return files
		}, "is not the one the checkpoint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, tr := newSigner(t), newTrail(t)
			tr.run(t, testKey, s, 30, 10)
			files := c.tamper(t, tr, tr.files(t))
			wantProblem(t, tr.verify(t, files, VerifyOptions{Keys: ring([][]byte{testKey}, s), Checkpoints: tr.checkpoints(t)}), c.what)
		})
	}
}

// rewriteChain edits every line with edit and re-links and re-seals the
// whole series with testKey: what an attacker holding the HMAC key can do.
func rewriteChain(t *testing.T, files []string, edit func([]byte) []byte) {
	t.Helper()
	l := newLog(Config{Key: testKey}, &memSink{}, false, 0, "")
	prev := ""
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var out []byte
		for _, line := range bytes.SplitAfter(b, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			i := bytes.LastIndex(line, []byte(macSuffix))
			body := append(edit(bytes.Clone(line[:i])), '}')
			if prev != "" {
				j := bytes.Index(body, []byte(`"prev":"`)) + len(`"prev":"`)
				body = append(append(bytes.Clone(body[:j]), prev...), body[j+64:]...)
			}
			sealed := seal(l.mac, body)
			prev = lineHash(sealed)
			out = append(out, sealed...)
		}
		os.WriteFile(f, out, 0o600)
	}
}

func TestForgedAndForeignCheckpointsAreRefused(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	tr.run(t, testKey, s, 20, 10)
	files, cps := tr.files(t), tr.checkpoints(t)
	keys := ring([][]byte{testKey}, s)

	forged := append([]Checkpoint{}, cps...)
	forged[0].Hash = strings.Repeat("0", 64)
	wantProblem(t, tr.verify(t, files, VerifyOptions{Keys: keys, Checkpoints: forged}), "forged or edited")

	other := newSigner(t)
	stranger := cps[0]
	stranger.sign(other.priv)
	wantProblem(t, tr.verify(t, files, VerifyOptions{Keys: keys, Checkpoints: []Checkpoint{stranger}}), "signed by a key the verifier was not given")

	// Another replica, with the same keys: its checkpoints do not witness
	// this log.
	replica := newTrail(t)
	replica.run(t, testKey, s, 20, 10)
	wantProblem(t, tr.verify(t, files, VerifyOptions{Keys: keys, Checkpoints: replica.checkpoints(t)}), "chain")
}

func TestATailCutThenARestartNamesTheGapAndReusesNoSequenceNumber(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	tr.maxBytes = 0
	tr.run(t, testKey, s, 10, 5)
	cps := tr.checkpoints(t)
	witnessed := cps[len(cps)-1].Seq
	files := tr.files(t)
	last := files[len(files)-1]
	b, _ := os.ReadFile(last)
	lines := bytes.SplitAfter(b, []byte("\n"))
	os.WriteFile(last, bytes.Join(lines[:len(lines)-6], nil), 0o600)

	tr.run(t, testKey, s, 2, 5)
	b, _ = os.ReadFile(tr.log)
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		e, err := parseLineKey(line, testKey)
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == KindChainStart && e.MissingTo == witnessed {
			if e.Seq != witnessed+1 {
				t.Fatalf("the chain-start naming the gap has seq %d; the witness saw %d", e.Seq, witnessed)
			}
			wantProblem(t, tr.verify(t, tr.files(t), VerifyOptions{Keys: ring([][]byte{testKey}, s), Checkpoints: tr.checkpoints(t)}), "porthole found the log shorter")
			// What came after the gap verifies from a checkpoint after it.
			after := tr.checkpoints(t)
			v := tr.verify(t, tr.files(t), VerifyOptions{Keys: ring([][]byte{testKey}, s), Checkpoints: after, FromCheckpoint: after[len(after)-1].Seq})
			if !v.OK() {
				t.Fatalf("from the checkpoint after the gap: %+v", v)
			}
			return
		}
	}
	t.Fatalf("no chain-start names the missing records:\n%s", b)
}

func TestVerifyingFromANamedCheckpointSkipsWhatWasPrunedBeforeIt(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	tr.run(t, testKey, s, 30, 10)
	files, cps := tr.files(t), tr.checkpoints(t)
	keys := ring([][]byte{testKey}, s)
	from := cps[1].Seq
	// The files wholly before the checkpoint are gone.
	var kept []string
	for _, f := range files {
		if lastSeqOf(t, f) >= from {
			kept = append(kept, f)
		}
	}
	if len(kept) == len(files) {
		t.Fatal("the test needs a file wholly before the checkpoint")
	}
	if v := tr.verify(t, kept, VerifyOptions{Keys: keys, Checkpoints: cps, FromCheckpoint: from}); !v.OK() || v.FirstSeq != from {
		t.Fatalf("from checkpoint %d: %+v", from, v)
	}
	// The log's own checkpoint records name it too, with no witness file.
	if v := tr.verify(t, kept, VerifyOptions{Keys: keys, FromCheckpoint: from}); !v.OK() {
		t.Fatalf("from checkpoint %d, by the log's own records: %+v", from, v)
	}
	// Without a public key, nothing proves the checkpoint genuine.
	wantProblem(t, tr.verify(t, kept, VerifyOptions{Keys: ring([][]byte{testKey}), FromCheckpoint: from}), "no checkpoint signed")
}

// TestRotatingBothKeysLeavesNoGap follows docs/audit.md's procedure: a new
// HMAC key and a new signing key are put in place and porthole restarted;
// the verifier holds the old and new keys, and the trail verifies whole.
func TestRotatingBothKeysLeavesNoGap(t *testing.T) {
	t.Parallel()
	oldSigner, newSigner := newSigner(t), newSigner(t)
	newKey := bytes.Repeat([]byte("n"), 32)
	tr := newTrail(t)
	tr.run(t, testKey, oldSigner, 10, 4)
	tr.run(t, newKey, newSigner, 10, 4)
	files, cps := tr.files(t), tr.checkpoints(t)
	v := tr.verify(t, files, VerifyOptions{Keys: ring([][]byte{testKey, newKey}, oldSigner, newSigner), Checkpoints: cps})
	if !v.OK() || v.ProvenTo == 0 || strings.Contains(strings.Join(v.Notes, "\n"), "cannot be proven") {
		t.Fatalf("after rotating both keys: %+v", v)
	}
	if !strings.Contains(strings.Join(v.Notes, "\n"), "the key was rotated") {
		t.Fatalf("no note of the rotation: %v", v.Notes)
	}
	wantProblem(t, tr.verify(t, files, VerifyOptions{Keys: ring([][]byte{newKey}, oldSigner, newSigner), Checkpoints: cps}), "names an HMAC key the verifier was not given")
	wantProblem(t, tr.verify(t, files, VerifyOptions{Keys: ring([][]byte{testKey, newKey}, newSigner), Checkpoints: cps}), "signed by a key the verifier was not given")
}

func TestCheckpointsAreWrittenOnAnIntervalWhenRecordsWereWritten(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	var got []Checkpoint
	done := make(chan struct{}, 10)
	l, err := Open(Config{Path: tr.log, Key: testKey, Signer: s.priv, CheckpointPath: tr.witness, CheckpointInterval: 50 * time.Millisecond, SyncInterval: 10 * time.Millisecond,
		OnCheckpoint: func(c Checkpoint, err error) {
			if err != nil {
				t.Error(err)
			}
			got = append(got, c)
			done <- struct{}{}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(context.Background(), callRecord("alice", "list_workflows")); err != nil {
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
	if cps := tr.checkpoints(t); len(cps) != 2 || cps[1] != got[1] {
		t.Fatalf("the witness holds %+v, OnCheckpoint saw %+v", cps, got)
	}
}

func lastSeqOf(t *testing.T, path string) uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return lastSeq(bytes.Split(bytes.TrimSpace(b), []byte("\n")))
}

// TestAWitnessThatCannotBeWrittenIsCounted: a failed witness write was
// only a line of the operations log (found by review).
func TestAWitnessThatCannotBeWrittenIsCounted(t *testing.T) {
	t.Parallel()
	s, tr := newSigner(t), newTrail(t)
	l, err := Open(Config{Path: tr.log, Key: testKey, Signer: s.priv, CheckpointPath: tr.witness, CheckpointEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	l.witness.Close() // every later write to it fails
	for i := 0; i < 4; i++ {
		if err := l.Write(context.Background(), callRecord("alice", "x")); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if n := l.Stats().WitnessFailures; n == 0 {
		t.Fatal("no witness failure counted")
	}
}
