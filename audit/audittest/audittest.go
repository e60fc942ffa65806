// Package audittest holds what the tests of the audit trail's readers
// share: a key, a call record, a log written with them, and signing keys.
// It is for tests only: porthole never imports it.
package audittest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
)

// Key is the HMAC key the tests write and verify logs with.
var Key = bytes.Repeat([]byte("k"), 32)

// CallRecord is a call record of principal calling tool with args.
func CallRecord(principal, tool string, args ...audit.Arg) audit.Record {
	return audit.Record{Kind: audit.KindCall, RequestID: "r1", Principal: principal, ClientAddr: "127.0.0.1:1", Transport: "http", UserAgent: "test/1", Method: "tools/call", Tool: tool, Args: args}
}

// WriteLog writes n call and result pairs to a log at path opened with
// cfg (Key unless cfg has one), closes it, and returns its lines.
func WriteLog(t testing.TB, path string, cfg audit.Config, n int) [][]byte {
	t.Helper()
	cfg.Path = path
	if cfg.Key == nil {
		cfg.Key = Key
	}
	l, err := audit.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writePairs(t, l, n)
	b, _ := os.ReadFile(path)
	return bytes.SplitAfter(b, []byte("\n"))
}

// Signer is a checkpoint signing key pair.
type Signer struct {
	Priv ed25519.PrivateKey
	Pub  ed25519.PublicKey
}

// NewSigner makes a signing key pair as porthole audit keygen does.
func NewSigner(t testing.TB) Signer {
	t.Helper()
	privPEM, pubPEM, err := audit.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := audit.ParseSigningKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := audit.ParsePublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	return Signer{priv, pub}
}

// Ring is a keyring of the HMAC keys and the signers' public keys.
func Ring(keys [][]byte, signers ...Signer) *audit.Keyring {
	var pubs []ed25519.PublicKey
	for _, s := range signers {
		pubs = append(pubs, s.Pub)
	}
	return audit.NewKeyring(keys, pubs)
}

// Rewrite writes lines to path in place of what it held.
func Rewrite(t testing.TB, path string, lines [][]byte) {
	t.Helper()
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Clock is a clock that moves a millisecond each time it is read.
type Clock struct{ Time time.Time }

// Now moves the clock on and reads it.
func (c *Clock) Now() time.Time { c.Time = c.Time.Add(time.Millisecond); return c.Time }

// Trail is one replica's audit log and its checkpoint file, in
// directories of their own; with an Origin, the log is kept as a Merkle
// tree under it.
type Trail struct {
	Log, Witness string
	MaxBytes     int64
	Origin       string
	// MaxAge and Now, when set, prune the log as porthole does.
	MaxAge time.Duration
	Now    func() time.Time
}

// NewTrail is a trail in fresh directories, its files rotated past 3,000
// bytes.
func NewTrail(t testing.TB) Trail {
	t.Helper()
	return Trail{Log: filepath.Join(t.TempDir(), "audit.log"), Witness: filepath.Join(t.TempDir(), "checkpoints"), MaxBytes: 3000}
}

// Run opens the trail's log with key and signer, writes n call and result
// pairs (a checkpoint every `every` records) and closes it.
func (tr Trail) Run(t testing.TB, key []byte, s Signer, n, every int) {
	t.Helper()
	l, err := audit.Open(audit.Config{Path: tr.Log, Key: key, Signer: s.Priv, CheckpointPath: tr.Witness, CheckpointEvery: every, MaxBytes: tr.MaxBytes, Origin: tr.Origin, MaxAge: tr.MaxAge, Now: tr.Now})
	if err != nil {
		t.Fatal(err)
	}
	writePairs(t, l, n)
}

// Checkpoints are the checkpoints the trail's witness file holds.
func (tr Trail) Checkpoints(t testing.TB) []audit.Checkpoint {
	t.Helper()
	cps, _, err := audit.ReadCheckpoints(tr.Witness)
	if err != nil {
		t.Fatal(err)
	}
	return cps
}

// writePairs writes n call and result pairs to l and closes it.
func writePairs(t testing.TB, l *audit.Log, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := l.Write(context.Background(), CallRecord("alice", "list_workflows", audit.Arg{Name: "pageSize", Value: "5"})); err != nil {
			t.Fatal(err)
		}
		if err := l.Write(context.Background(), audit.Record{Kind: audit.KindResult, Principal: "alice", Tool: "list_workflows", Outcome: audit.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// Eventually fails t unless cond holds within 2 s.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 2s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
