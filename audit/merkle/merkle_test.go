package merkle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	flog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// line is the record line of a test's record n.
func line(n int64) []byte { return []byte(fmt.Sprintf(`{"seq":%d,"kind":"call"}`, n+1)) }

// inMemory is the tree of the first n lines, kept in memory, as tlog
// computes it: what the file must agree with.
func inMemory(t *testing.T, n int64) tlog.Hash {
	t.Helper()
	var stored []tlog.Hash
	r := tlog.HashReaderFunc(func(ix []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ix))
		for i, x := range ix {
			out[i] = stored[x]
		}
		return out, nil
	})
	for i := int64(0); i < n; i++ {
		digest := sha256.Sum256(line(i))
		hs, err := tlog.StoredHashes(i, digest[:], r)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hs...)
	}
	h, err := tlog.TreeHash(n, r)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestATreeFileHoldsTheTreeAcrossAReopen: the roots of the file's tree are
// tlog's, at every size, after the file is closed and opened again; a
// record's inclusion proof and the consistency proof between two sizes
// check against those roots, and fail against another record or root.
func TestATreeFileHoldsTheTreeAcrossAReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log.tree")
	tree, err := OpenTree(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 37; i++ {
		if err := tree.Append(line(i)); err != nil {
			t.Fatal(err)
		}
	}
	tree.Close()
	if tree, err = OpenTree(path); err != nil || tree.Size() != 37 {
		t.Fatalf("reopened: %v, %d records", err, tree.Size())
	}
	defer tree.Close()
	for i := int64(37); i < 100; i++ {
		if err := tree.Append(line(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, size := range []int64{0, 1, 2, 3, 37, 64, 99, 100} {
		if root, err := tree.Root(size); err != nil || root != inMemory(t, size) {
			t.Fatalf("the root at %d: %v %v", size, root, err)
		}
	}
	root100, _ := tree.Root(100)
	root37, _ := tree.Root(37)
	p, err := tree.ProveRecord(12, 100)
	if err != nil || tlog.CheckRecord(p, 100, root100, 12, LeafHash(line(12))) != nil {
		t.Fatalf("record 12's proof: %v", err)
	}
	if tlog.CheckRecord(p, 100, root100, 12, LeafHash(line(13))) == nil {
		t.Error("another record checked against record 12's proof")
	}
	tp, err := tree.ProveTree(100, 37)
	if err != nil || tlog.CheckTree(tp, 100, root100, 37, root37) != nil {
		t.Fatalf("the consistency proof from 37 to 100: %v", err)
	}
	if tlog.CheckTree(tp, 100, root100, 37, inMemory(t, 36)) == nil {
		t.Error("another old root checked against the consistency proof")
	}
}

// TestATornTreeFileIsRefusedWithItsWholeLength: a tree file whose last
// write was cut short opens with an error naming how many records its
// whole hashes hold.
func TestATornTreeFileIsRefusedWithItsWholeLength(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tree")
	tree, err := OpenTree(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 8; i++ {
		if err := tree.Append(line(i)); err != nil {
			t.Fatal(err)
		}
	}
	tree.Close()
	fi, _ := os.Stat(path)
	for _, cut := range []int64{1, 32} { // half a hash; a whole hash of the last record's two
		if err := os.Truncate(path, fi.Size()-cut); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenTree(path); err == nil || !bytes.Contains([]byte(err.Error()), []byte("the hashes of 7 records")) {
			t.Errorf("cut by %d bytes: %v", cut, err)
		}
	}
}

// TestACheckpointIsACNoteOthersRead: porthole's signed checkpoint opens
// with its own verifier and with transparency-dev/formats' parser (an
// implementation porthole does not write with), given only the verifier
// key; an edited size, another origin's key, and another key are refused.
func TestACheckpointIsACNoteOthersRead(t *testing.T) {
	t.Parallel()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	const origin = "porthole.example.com/audit/porthole-0"
	c := Checkpoint{Origin: origin, Size: 100, Root: inMemory(t, 100)}
	signed, err := SignCheckpoint(c, NewSigner(origin, priv))
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := VerifierKey(origin, pub)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := OpenCheckpoint(signed, v); err != nil || got != c {
		t.Fatalf("porthole reads %+v, %v", got, err)
	}
	cp, _, _, err := flog.ParseCheckpoint(signed, origin, v)
	if err != nil || cp.Origin != origin || cp.Size != 100 || !bytes.Equal(cp.Hash, c.Root[:]) {
		t.Fatalf("transparency-dev/formats reads %+v, %v", cp, err)
	}
	edited := bytes.Replace(signed, []byte("\n100\n"), []byte("\n101\n"), 1)
	if _, err := OpenCheckpoint(edited, v); err == nil {
		t.Error("an edited size opened")
	}
	if _, _, _, err := flog.ParseCheckpoint(edited, origin, v); err == nil {
		t.Error("formats opened an edited size")
	}
	otherPub, _, _ := ed25519.GenerateKey(rand.Reader)
	for name, key := range map[string]struct {
		origin string
		pub    ed25519.PublicKey
	}{"another origin's name": {"porthole.example.com/audit/porthole-1", pub}, "another key": {origin, otherPub}} {
		k, _ := VerifierKey(key.origin, key.pub)
		other, _ := note.NewVerifier(k)
		if _, err := OpenCheckpoint(signed, other); err == nil {
			t.Errorf("%s opened the checkpoint", name)
		}
	}
	if _, err := SignCheckpoint(Checkpoint{Origin: "elsewhere", Size: 1}, NewSigner(origin, priv)); err == nil {
		t.Error("a checkpoint of another origin was signed")
	}
}

// TestAFrontierGivesTheRootAtEverySize: streaming leaves through a
// Frontier gives tlog's root at every size from 0 to 300, holding no more
// hashes than the size has bits set.
func TestAFrontierGivesTheRootAtEverySize(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tree")
	tree, err := OpenTree(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	var f Frontier
	for n := int64(0); n <= 300; n++ {
		want, err := tree.Root(n)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Root(); got != want || f.Size() != n {
			t.Fatalf("at %d leaves the frontier's root is %v, want %v", n, got, want)
		}
		if len(f.edges) > 64 || len(f.edges) != popcount(n) {
			t.Fatalf("at %d leaves the frontier holds %d hashes", n, len(f.edges))
		}
		f.Append(line(n))
		if err := tree.Append(line(n)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAFrontierTakenUpFromATreesEdgeGoesOnAsTheTree: the right edge a
// tree file gives at a size, made a Frontier, reaches the tree's roots at
// every later size; an edge of the wrong length is refused.
func TestAFrontierTakenUpFromATreesEdgeGoesOnAsTheTree(t *testing.T) {
	t.Parallel()
	tree, err := OpenTree(filepath.Join(t.TempDir(), "tree"))
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	for n := int64(0); n < 100; n++ {
		if err := tree.Append(line(n)); err != nil {
			t.Fatal(err)
		}
	}
	for _, at := range []int64{0, 1, 7, 64, 77} {
		edge, err := tree.Edge(at)
		if err != nil {
			t.Fatal(err)
		}
		f, err := NewFrontier(at, edge)
		if err != nil {
			t.Fatal(err)
		}
		for n := at; n < 100; n++ {
			if want, _ := tree.Root(n); f.Root() != want {
				t.Fatalf("taken up at %d: the root at %d differs", at, n)
			}
			leaf, err := tree.Leaf(n)
			if err != nil || leaf != LeafHash(line(n)) {
				t.Fatalf("leaf %d: %v", n, err)
			}
			f.Append(line(n))
		}
	}
	if _, err := NewFrontier(7, make([]tlog.Hash, 2)); err == nil {
		t.Fatal("two hashes taken for the edge of seven records")
	}
}

func popcount(n int64) int {
	c := 0
	for ; n > 0; n &= n - 1 {
		c++
	}
	return c
}

// FuzzParseTextIsTextsInverse: a checkpoint text ParseText reads is the
// text of what it read, byte for byte, and its origin passed CheckOrigin;
// anything else is refused, never a panic.
func FuzzParseTextIsTextsInverse(f *testing.F) {
	f.Add("porthole.example.com/audit/porthole-0\n12\n" + strings.Repeat("A", 43) + "=\n")
	f.Add("o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n")
	f.Add("o\n-1\nx\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseText(text)
		if err != nil {
			return
		}
		if c.Text() != text || CheckOrigin(c.Origin) != nil {
			t.Fatalf("%q read as %+v", text, c)
		}
	})
}
