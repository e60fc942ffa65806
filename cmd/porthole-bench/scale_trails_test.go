package main

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/review"
)

// TestTheTreeTrailIsATreeWhoseNotesVerify: the trail curve's tree trail
// has its tree file beside it, and verify with the public key recomputes
// its checkpoints' trees from the records, more than one of them, as the
// curve's verify of it must.
func TestTheTreeTrailIsATreeWhoseNotesVerify(t *testing.T) {
	t.Parallel()
	k, err := newTrailKeys(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trail-tree.log")
	n, err := writeTrail(audit.Config{Path: path, Key: k.hmac, Signer: k.signer, Origin: trailOrigin, CheckpointPath: path + ".checkpoints"}, 3e6)
	if err != nil {
		t.Fatal(err)
	}
	if n < 3e6 {
		t.Errorf("the trail has %d bytes, want at least 3e6", n)
	}
	if _, err := os.Stat(path + audit.TreeSuffix); err != nil {
		t.Errorf("no tree file beside the trail: %v", err)
	}
	pub := k.signer.Public().(ed25519.PublicKey)
	v, err := review.VerifyWith([]string{path}, review.VerifyOptions{Keys: audit.NewKeyring([][]byte{k.hmac}, []ed25519.PublicKey{pub})})
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || v.TreeCheckpoints < 2 || v.TreeUnchecked != 0 {
		t.Fatalf("verified %+v, want the chain whole and every note recomputed, at least two", v)
	}
	if basis := strings.Join(v.Basis(), "\n"); !strings.Contains(basis, treeRecomputed) {
		t.Errorf("verify's basis does not say %q, which the curve looks for:\n%s", treeRecomputed, basis)
	}
}

// TestTheTrailTableSetsTheTreeBesideThePlainTrail: each size's row has
// both verifies with their peaks, and the tree's throughput over the
// plain trail's, each of its own trail.
func TestTheTrailTableSetsTheTreeBesideThePlainTrail(t *testing.T) {
	t.Parallel()
	rep := scaleReport{opts: scaleOptions{rounds: 4}, trails: []trailPoint{{mb: 10, bytes: 10e6, treeBytes: 10.01e6, turns: 200,
		verify:     timing{took: 100 * time.Millisecond, peakMiB: 38},
		verifyTree: timing{took: 110 * time.Millisecond, peakMiB: 40},
		report:     timing{took: 90 * time.Millisecond, peakMiB: 39}}}}
	var b strings.Builder
	rep.trailsMD(&b)
	want := "| 10 MB, 200 turns | 100ms, 100 MB/s, 38 MiB | 110ms, 91 MB/s, 40 MiB | 0.91× | 90ms, 111 MB/s, 39 MiB |"
	if !strings.Contains(b.String(), want) {
		t.Errorf("the table lacks %q:\n%s", want, b.String())
	}
}
