package review

import (
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/merkle"
)

// treeWalk is what the walk knows of a log kept as a Merkle tree
// (audit.Config.Origin): the right edge of the tree of the records
// accepted so far, from which each checkpoint's signed note is checked by
// recomputing its root, and the tree file, when given, held to the notes
// by consistency proofs.
type treeWalk struct {
	// edge is nil until the series' genesis or a chain-start or anchor
	// that carries the tree's edge gives where the tree stands.
	edge   *merkle.Frontier
	origin string
	want   string // VerifyOptions.Origin
	// file is the tree file (VerifyOptions.TreeFile), or nil; last is the
	// latest note that checked out (a checkpoint's note is met twice: in
	// the log and among the checkpoints given).
	file *merkle.Tree
	last *merkle.Checkpoint
	// beforeAnchor is the tree before the last record when that record is
	// an anchor: a checkpoint made before a rotation is written after the
	// anchor the rotation wrote, and its note names the tree before it.
	beforeAnchor *merkle.Checkpoint
}

// treeEdge takes up the tree at a record that carries its edge, or holds
// the edge the walk computed to the one the record carries. Without a
// public key no note can be checked, and the tree is not kept.
func (w *chainWalk) treeEdge(path string, n int, e audit.Entry) *Problem {
	if e.Tree == nil || !w.ring.HasSigning() {
		return nil
	}
	f, err := e.Tree.Frontier()
	if err != nil {
		return &Problem{path, n, "the record's tree edge is malformed: " + err.Error()}
	}
	if w.tree.edge == nil {
		w.tree.edge = &f
		return nil
	}
	if f.Size() != w.tree.edge.Size() || f.Root() != w.tree.edge.Root() {
		return &Problem{path, n, fmt.Sprintf("the record's tree edge (%d records) is not the tree of the %d records before it: records were edited, deleted, inserted or reordered", f.Size(), w.tree.edge.Size())}
	}
	return nil
}

// treeLeaf adds an accepted record's leaf hash (CheckedLine.Leaf) to the
// tree.
func (w *chainWalk) treeLeaf(leaf tlog.Hash, kind audit.Kind) {
	if w.tree.edge == nil {
		return
	}
	w.tree.beforeAnchor = nil
	if kind == audit.KindAnchor {
		w.tree.beforeAnchor = &merkle.Checkpoint{Size: w.tree.edge.Size(), Root: w.tree.edge.Root()}
	}
	w.tree.edge.AppendHash(leaf)
}

// isTreeBefore reports whether cp is the tree of the records accepted so
// far, or of those before an anchor just accepted.
func (t *treeWalk) isTreeBefore(cp merkle.Checkpoint) bool {
	if cp.Size == t.edge.Size() && cp.Root == t.edge.Root() {
		return true
	}
	b := t.beforeAnchor
	return b != nil && cp.Size == b.Size && cp.Root == b.Root
}

// checkNote checks a checkpoint's signed note: signed by a key given,
// under the series' one origin, and, once the walk knows the tree, of the
// tree of exactly the records accepted so far. A note of the same tree at
// every checkpoint is also the proof that the trail only grew between any
// two of them: each earlier tree is a prefix of each later one.
func (w *chainWalk) checkNote(path string, n int, text string) *Problem {
	cp, err := w.ring.OpenNote(text)
	if err != nil {
		return &Problem{path, n, "the checkpoint's tree note is not genuine: " + safe(err.Error())}
	}
	switch {
	case w.tree.want != "" && cp.Origin != w.tree.want:
		return &Problem{path, n, fmt.Sprintf("the checkpoint's tree note is of origin %s, not %s (--origin): another trail's", cp.Origin, safe(w.tree.want))}
	case w.tree.origin == "":
		w.tree.origin, w.v.Origin = cp.Origin, safe(cp.Origin)
	case cp.Origin != w.tree.origin:
		return &Problem{path, n, fmt.Sprintf("the checkpoint's tree note is of origin %s, but the series is of origin %s: trails of different origins are mixed", safe(cp.Origin), safe(w.tree.origin))}
	}
	if w.tree.edge == nil {
		w.v.TreeUnchecked++
		return nil
	}
	if !w.tree.isTreeBefore(cp) {
		return &Problem{path, n, fmt.Sprintf("the signed tree of %d records is not the tree of the %d records the series holds before it: records were edited, deleted, inserted or reordered", cp.Size, w.tree.edge.Size())}
	}
	if last := w.tree.last; last != nil && last.Size == cp.Size {
		return nil // the same tree, met again
	}
	if p := w.checkTreeFile(cp); p != nil {
		return p
	}
	w.tree.last = &cp
	w.v.TreeCheckpoints++
	w.v.TreeSize = max(w.v.TreeSize, cp.Size)
	return nil
}

// checkTreeFile holds the tree file to a note that checked out: its root
// at the note's size, and a consistency proof from the note before.
func (w *chainWalk) checkTreeFile(cp merkle.Checkpoint) *Problem {
	t := w.tree.file
	if t == nil {
		return nil
	}
	if root, err := t.Root(cp.Size); err != nil || root != cp.Root {
		return &Problem{"tree file", 0, fmt.Sprintf("the tree file does not hold the signed tree of %d records (%v): it was cut, edited or is another log's", cp.Size, err)}
	}
	if last := w.tree.last; last != nil {
		proof, err := t.ProveTree(cp.Size, last.Size)
		if err == nil {
			err = tlog.CheckTree(proof, cp.Size, cp.Root, last.Size, last.Root)
		}
		if err != nil {
			return &Problem{"tree file", 0, fmt.Sprintf("no consistency proof from the signed tree of %d records to that of %d: %v", last.Size, cp.Size, err)}
		}
	}
	return nil
}

// witnessedNote checks the note of a given checkpoint of the record just
// accepted, which the tree now holds.
func (w *chainWalk) witnessedNote(seq uint64) *Problem {
	c, ok := w.witnessed[seq]
	if !ok || c.Note == "" {
		return nil
	}
	if p := w.checkNote("checkpoints", 0, c.Note); p != nil {
		p.What = fmt.Sprintf("the checkpoint of seq %d: %s", seq, p.What)
		return p
	}
	return nil
}

// treeBasis is what Basis says of the series' Merkle tree.
func (v *Verification) treeBasis() []string {
	if v.Origin == "" {
		return nil
	}
	var lines []string
	if v.TreeCheckpoints > 0 {
		lines = append(lines, fmt.Sprintf("Merkle tree of origin %s: %d signed tree checkpoint(s) recomputed from the records, up to %d records: each earlier tree is a prefix of each later one", v.Origin, v.TreeCheckpoints, v.TreeSize))
	}
	if v.WitnessedTo > 0 {
		lines = append(lines, fmt.Sprintf("witnessed: seq 1 to %d are in trees a quorum of %d witness(es) given cosigned, all %d by %s: written before then, and not rewritten or cut since by anyone, whatever keys of porthole's they hold, without those witnesses", v.WitnessedTo, v.WitnessedBy, v.WitnessedBy, v.WitnessedAt.UTC().Format(time.RFC3339)))
	}
	if v.TreeUnchecked > 0 {
		lines = append(lines, fmt.Sprintf("Merkle tree of origin %s: %d signed tree checkpoint(s) NOT recomputed: verification began where the records do not say where the tree stood", v.Origin, v.TreeUnchecked))
	}
	return lines
}
