// Package merkle keeps an audit trail's records as the leaves of an RFC
// 6962 Merkle tree, and writes and reads the tree's checkpoints as C2SP
// tlog-checkpoint signed notes: what lets a reviewer prove one record was
// in the trail, or that the trail only grew between two checkpoints,
// without reading the whole trail. golang.org/x/mod's sumdb/tlog computes
// the hashes and proofs, and its sumdb/note signs and opens the notes.
//
// # The tree file
//
// A tree's hashes are kept in a file of their own, beside the trail, so
// that a root or a proof needs no re-read of the records: the stored hash
// of index i (tlog.StoredHashIndex) is the 32 bytes at offset 32*i.
// Record n (from 0) adds 1 + the trailing zeros of n+1 hashes, about two a
// record on average. The file is only appended to; its length says how
// many records the tree holds, and a length no number of records gives
// (a write cut short) is refused at open, with the size it can be cut
// back to.
//
// A leaf is the SHA-256 of a record's line as the trail holds it, without
// its newline (the hash the next record's "prev" names): its leaf hash is
// RFC 6962's of those 32 bytes (LeafHash). A reader that hashes each line
// anyway, as verify and the writer do, adds one hash of 33 bytes a record,
// not a second pass over the record's bytes.
package merkle

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"golang.org/x/mod/sumdb/tlog"
)

// Tree is a Merkle tree whose stored hashes are kept in a file.
type Tree struct {
	f *os.File
	// n is the number of records (leaves), hashes the number of stored
	// hashes (tlog.StoredHashCount(n)).
	n, hashes int64
}

// ErrTorn is a tree file whose length no number of records gives.
var ErrTorn = errors.New("the tree file's length is no whole number of records' hashes")

// OpenTree opens (or creates) the tree file at path and reads how many
// records it holds.
func OpenTree(path string) (*Tree, error) { return openTree(path, os.O_RDWR|os.O_CREATE) }

// ReadTree opens an existing tree file to read, as a reviewer's tools do
// while porthole may be appending to it.
func ReadTree(path string) (*Tree, error) { return openTree(path, os.O_RDONLY) }

func openTree(path string, flag int) (*Tree, error) {
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	n, whole := records(fi.Size())
	if !whole {
		f.Close()
		return nil, fmt.Errorf("%s: %w: %d bytes; the hashes of %d records are its first %d", path, ErrTorn, fi.Size(), n, 32*tlog.StoredHashCount(n))
	}
	return &Tree{f: f, n: n, hashes: tlog.StoredHashCount(n)}, nil
}

// CutTorn cuts a tree file whose last record's hashes were written only in
// part (ErrTorn) back to its whole records: that record's append never
// ended, so nothing was signed of it.
func CutTorn(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	n, _ := records(fi.Size())
	return os.Truncate(path, 32*tlog.StoredHashCount(n))
}

// records is how many records a tree file of size bytes holds, and
// whether the file holds exactly their hashes.
func records(size int64) (n int64, whole bool) {
	count := size / 32
	// StoredHashCount grows with n by 1 or more, and is at least n: the
	// largest n whose count is at most the file's is found by a binary
	// search up to count.
	n = int64(sort.Search(int(count)+1, func(i int) bool { return tlog.StoredHashCount(int64(i)) > count })) - 1
	return n, size%32 == 0 && tlog.StoredHashCount(n) == count
}

// Path is the tree file's path.
func (t *Tree) Path() string { return t.f.Name() }

// Size is the number of records the tree holds.
func (t *Tree) Size() int64 { return t.n }

// LeafHash is the leaf hash of a record's line (without its newline).
func LeafHash(line []byte) tlog.Hash { return DigestLeafHash(sha256.Sum256(line)) }

// DigestLeafHash is the leaf hash of a line whose SHA-256 is digest.
func DigestLeafHash(digest [32]byte) tlog.Hash { return tlog.RecordHash(digest[:]) }

// Append adds a record's line (without its newline) as the next leaf.
// The hashes are written, not synced: Sync makes them durable.
func (t *Tree) Append(line []byte) error { return t.AppendDigest(sha256.Sum256(line)) }

// AppendDigest is Append of a line whose SHA-256 is digest.
func (t *Tree) AppendDigest(digest [32]byte) error {
	hashes, err := tlog.StoredHashes(t.n, digest[:], t)
	if err != nil {
		return err
	}
	b := make([]byte, 0, 32*len(hashes))
	for _, h := range hashes {
		b = append(b, h[:]...)
	}
	if _, err := t.f.WriteAt(b, 32*t.hashes); err != nil {
		return err
	}
	t.n++
	t.hashes += int64(len(hashes))
	return nil
}

// Truncate cuts the tree back to its first n records.
func (t *Tree) Truncate(n int64) error {
	if n < 0 || n > t.n {
		return fmt.Errorf("cutting a tree of %d records to %d", t.n, n)
	}
	hashes := tlog.StoredHashCount(n)
	if err := t.f.Truncate(32 * hashes); err != nil {
		return err
	}
	t.n, t.hashes = n, hashes
	return nil
}

// Sync makes the hashes written so far durable.
func (t *Tree) Sync() error { return t.f.Sync() }

// Close closes the tree file.
func (t *Tree) Close() error { return t.f.Close() }

// ReadHashes reads stored hashes by index (tlog.HashReader).
func (t *Tree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, index := range indexes {
		if index < 0 || index >= t.hashes {
			return nil, fmt.Errorf("stored hash %d is beyond the tree's %d", index, t.hashes)
		}
		if _, err := t.f.ReadAt(out[i][:], 32*index); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
	return out, nil
}

// Edge is the right edge of the tree of the first size records: the
// hashes of its perfect subtrees, largest first, which a Frontier of those
// records holds (NewFrontier).
func (t *Tree) Edge(size int64) ([]tlog.Hash, error) {
	if size < 0 || size > t.n {
		return nil, fmt.Errorf("a tree of %d records, of a tree of %d", size, t.n)
	}
	var indexes []int64
	start := int64(0)
	for k := 62; k >= 0; k-- {
		if size>>k&1 == 1 {
			indexes = append(indexes, tlog.StoredHashIndex(k, start>>k))
			start += 1 << k
		}
	}
	return t.ReadHashes(indexes)
}

// Leaf is the leaf hash of record n (from 0): LeafHash of its line.
func (t *Tree) Leaf(n int64) (tlog.Hash, error) {
	if n < 0 || n >= t.n {
		return tlog.Hash{}, fmt.Errorf("record %d of a tree of %d", n, t.n)
	}
	hs, err := t.ReadHashes([]int64{tlog.StoredHashIndex(0, n)})
	if err != nil {
		return tlog.Hash{}, err
	}
	return hs[0], nil
}

// Root is the root hash of the tree of the first size records.
func (t *Tree) Root(size int64) (tlog.Hash, error) {
	if size < 0 || size > t.n {
		return tlog.Hash{}, fmt.Errorf("a tree of %d records, of a tree of %d", size, t.n)
	}
	return tlog.TreeHash(size, t)
}

// ProveRecord is the inclusion proof of record n (from 0) in the tree of
// the first size records.
func (t *Tree) ProveRecord(n, size int64) (tlog.RecordProof, error) {
	if size > t.n {
		return nil, fmt.Errorf("a tree of %d records, of a tree of %d", size, t.n)
	}
	return tlog.ProveRecord(size, n, t)
}

// ProveTree is the consistency proof that the tree of the first oldSize
// records is a prefix of the tree of the first newSize.
func (t *Tree) ProveTree(newSize, oldSize int64) (tlog.TreeProof, error) {
	if newSize > t.n {
		return nil, fmt.Errorf("a tree of %d records, of a tree of %d", newSize, t.n)
	}
	return tlog.ProveTree(newSize, oldSize, t)
}

// Grow takes in records another writer appended to the tree's file since
// it was opened (ReadTree): the tree then holds n records, when the file
// holds their hashes.
func (t *Tree) Grow(n int64) error {
	fi, err := t.f.Stat()
	if err != nil {
		return err
	}
	if hashes := tlog.StoredHashCount(n); n >= t.n && 32*hashes <= fi.Size() {
		t.n, t.hashes = n, hashes
		return nil
	}
	return fmt.Errorf("the tree file holds %d bytes, not the hashes of %d records", fi.Size(), n)
}
