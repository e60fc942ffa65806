package review

import (
	"fmt"
	"sort"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit/merkle"
	"github.com/porthole-dev/porthole/audit/witness"
)

// Witnessing is what verify holds a series kept as a Merkle tree to
// beyond porthole's own keys: checkpoints its witnesses cosigned. It needs
// VerifyOptions.Origin: one signing key may sign several trails.
type Witnessing struct {
	// Keys are the witnesses' cosignature/v1 verifier keys, one per
	// witness; Quorum is how many of them must have cosigned a tree for it
	// to prove the series.
	Keys   []*witness.Verifier
	Quorum int
	// Cosigned are checkpoints with cosignatures: what the witnesses
	// serve, or the lines of the log's cosignatures file. Nothing in them
	// is trusted until the log's and the witnesses' signatures check.
	Cosigned [][]byte
}

// cosignedTree is one tree of the log that witnesses cosigned, and which
// of them did, by public key.
type cosignedTree struct {
	size int64
	root tlog.Hash
	by   map[string]*witness.Verifier
	seen bool // the walk met the series' tree of this size
}

// cosigning is one cosignature of one witness: of a tree of size
// records, at a time.
type cosigning struct {
	size int64
	at   time.Time
}

// witnessWalk is what the walk holds the series' tree to: the cosigned
// trees by size, and each witness's cosignatures.
type witnessWalk struct {
	quorum   int
	bySize   map[int64]*cosignedTree
	byWitnes map[string][]cosigning // by public key
	names    map[string]string      // by public key
}

// indexCosigned checks each cosigned checkpoint's signatures, the log's
// (a public key given, under VerifyOptions.Origin) and the witnesses'
// (each line on its own: a forged line of a witness given is a problem,
// never passed over), and indexes the trees. Two trees of one size are a
// fork the log signed.
func (w *chainWalk) indexCosigned(o *Witnessing) *Problem {
	if o == nil {
		return nil
	}
	if w.tree.want == "" {
		return &Problem{"cosigned checkpoints", 0, "witnesses' checkpoints need the trail's origin: one signing key may sign several trails"}
	}
	ww := &witnessWalk{quorum: o.Quorum, bySize: map[int64]*cosignedTree{}, byWitnes: map[string][]cosigning{}, names: map[string]string{}}
	for i, text := range o.Cosigned {
		cp, err := w.ring.OpenNote(string(text))
		if err != nil {
			return &Problem{"cosigned checkpoints", i + 1, "the checkpoint is not signed by a public key given: " + safe(err.Error())}
		}
		if cp.Origin != w.tree.want {
			continue // another trail's
		}
		_, cs, err := witness.Cosignatures(text, o.Keys)
		if err != nil {
			return &Problem{"cosigned checkpoints", i + 1, safe(err.Error())}
		}
		if p := ww.add(cp, cs, i+1); p != nil {
			return p
		}
	}
	w.wit = ww
	return nil
}

// add takes in a tree's cosignatures.
func (ww *witnessWalk) add(cp merkle.Checkpoint, cs []witness.Cosignature, line int) *Problem {
	if len(cs) == 0 {
		return nil
	}
	c, ok := ww.bySize[cp.Size]
	if !ok {
		c = &cosignedTree{size: cp.Size, root: cp.Root, by: map[string]*witness.Verifier{}}
		ww.bySize[cp.Size] = c
	}
	if c.root != cp.Root {
		return &Problem{"cosigned checkpoints", line, fmt.Sprintf("the log signed two trees of %d records, and witnesses cosigned each (%s one, %s the other): the log forked", cp.Size, ww.nameOf(c.by), safe(cs[0].Witness.Name()))}
	}
	for _, s := range cs {
		key := string(s.Witness.PublicKey())
		c.by[key] = s.Witness
		ww.names[key] = s.Witness.Name()
		ww.byWitnes[key] = append(ww.byWitnes[key], cosigning{cp.Size, s.Time})
	}
	return nil
}

func (ww *witnessWalk) nameOf(by map[string]*witness.Verifier) string {
	for _, v := range by {
		return safe(v.Name())
	}
	return "-"
}

// proven is the largest size a quorum of witnesses cosigned a tree of, or
// larger, and the time by which they had: each witness's largest
// cosigned size, the quorum-th largest of them; and, of the witnesses
// that reached it, each one's earliest cosignature of a tree that large,
// the quorum-th earliest of them (so that no single witness's clock sets
// the bound).
func (ww *witnessWalk) proven() (int64, time.Time) {
	var largest []int64
	for _, cs := range ww.byWitnes {
		m := int64(0)
		for _, c := range cs {
			m = max(m, c.size)
		}
		largest = append(largest, m)
	}
	if len(largest) < ww.quorum {
		return 0, time.Time{}
	}
	sort.Slice(largest, func(i, j int) bool { return largest[i] > largest[j] })
	size := largest[ww.quorum-1]
	var firsts []time.Time
	for _, cs := range ww.byWitnes {
		var first time.Time
		for _, c := range cs {
			if c.size >= size && (first.IsZero() || c.at.Before(first)) {
				first = c.at
			}
		}
		if !first.IsZero() {
			firsts = append(firsts, first)
		}
	}
	sort.Slice(firsts, func(i, j int) bool { return firsts[i].Before(firsts[j]) })
	return size, firsts[ww.quorum-1]
}

// checkCosigned holds the series' tree, of the records accepted so far, to
// a tree witnesses cosigned of that size.
func (w *chainWalk) checkCosigned(path string, n int) *Problem {
	if w.wit == nil || w.tree.edge == nil {
		return nil
	}
	c, ok := w.wit.bySize[w.tree.edge.Size()]
	if !ok {
		return nil
	}
	c.seen = true
	if c.root != w.tree.edge.Root() {
		return &Problem{path, n, fmt.Sprintf("the series' tree of %d records is not the one witness %s cosigned: the records were rewritten after that witness saw them, or the log showed it a fork", c.size, w.wit.nameOf(c.by))}
	}
	return nil
}

// finishWitnessed holds the series to every tree witnesses cosigned (one
// larger than the series is its end cut, whatever the quorum) and says how
// far a quorum proves it.
func (w *chainWalk) finishWitnessed() *Problem {
	if w.wit == nil {
		return nil
	}
	held := int64(-1)
	if w.tree.edge != nil {
		held = w.tree.edge.Size()
	}
	for size, c := range w.wit.bySize {
		if held >= 0 && size > held {
			return &Problem{"", 0, fmt.Sprintf("records %d to %d are missing: witness %s cosigned a tree of %d records, and the series holds %d: the end of the trail was cut", held+1, size, w.wit.nameOf(c.by), size, held)}
		}
	}
	size, at := w.wit.proven()
	switch {
	case size == 0:
		return &Problem{"", 0, fmt.Sprintf("no tree of the series was cosigned by a quorum of %d of the witnesses given", w.wit.quorum)}
	case held < 0:
		w.v.Notes = append(w.v.Notes, "the trees the witnesses cosigned could not be held to the series: verification began where the records do not say where the tree stood")
		return nil
	}
	w.v.WitnessedTo, w.v.WitnessedBy, w.v.WitnessedAt = size, w.wit.quorum, at
	return nil
}
