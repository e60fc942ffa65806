package merkle

import (
	"crypto/sha256"
	"fmt"
	"math/bits"
	"slices"

	"golang.org/x/mod/sumdb/tlog"
)

// emptyRoot is the root of a tree of no leaves.
var emptyRoot = tlog.Hash(sha256.Sum256(nil))

// Frontier is a tree's right edge: the roots of its perfect subtrees,
// largest first, as a reader that streams a trail keeps them. It holds at
// most 64 hashes whatever the size, and gives the root at every size the
// tree passes through, so a verifier can check each checkpoint's root
// without keeping the records or their hashes.
type Frontier struct {
	size  int64
	edges []tlog.Hash // edges[i] covers 2^k leaves, k the i-th set bit of size from the top
}

// NewFrontier is the Frontier of a tree of size leaves whose right edge is
// edges (Tree.Edge), from which more leaves can be added: how a reader
// takes up a trail whose earlier records it does not hold.
func NewFrontier(size int64, edges []tlog.Hash) (Frontier, error) {
	if size < 0 || len(edges) != bits.OnesCount64(uint64(size)) {
		return Frontier{}, fmt.Errorf("%d hashes cannot be the right edge of a tree of %d records", len(edges), size)
	}
	return Frontier{size: size, edges: slices.Clone(edges)}, nil
}

// Edge is the right edge: the hashes of the perfect subtrees, largest
// first.
func (f *Frontier) Edge() []tlog.Hash { return slices.Clone(f.edges) }

// Size is the number of leaves added.
func (f *Frontier) Size() int64 { return f.size }

// Append adds a record's line (without its newline) as the next leaf.
func (f *Frontier) Append(line []byte) { f.AppendHash(LeafHash(line)) }

// AppendHash adds a leaf by its leaf hash (LeafHash).
func (f *Frontier) AppendHash(h tlog.Hash) {
	// A leaf is a perfect subtree of one; where the sizes' low bits are
	// set, it completes subtrees of two, four, ... with the last edges.
	for n := f.size; n&1 == 1; n >>= 1 {
		last := len(f.edges) - 1
		h = tlog.NodeHash(f.edges[last], h)
		f.edges = f.edges[:last]
	}
	f.edges = append(f.edges, h)
	f.size++
}

// Root is the RFC 6962 root of the leaves added: the perfect subtrees
// folded from the smallest.
func (f *Frontier) Root() tlog.Hash {
	if len(f.edges) == 0 {
		return emptyRoot // RFC 6962: the hash of no bytes
	}
	h := f.edges[len(f.edges)-1]
	for i := len(f.edges) - 2; i >= 0; i-- {
		h = tlog.NodeHash(f.edges[i], h)
	}
	return h
}
