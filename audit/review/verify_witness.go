package review

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit/merkle"
	"github.com/porthole-dev/porthole/audit/witness"
)

// Witnessing is what verify holds a series kept as a Merkle tree to
// beyond porthole's own keys: checkpoints its witnesses cosigned.
type Witnessing struct {
	// Keys are the witnesses' cosignature/v1 verifier keys; Quorum is how
	// many of them must have cosigned a tree for it to prove the series.
	Keys   []*witness.Verifier
	Quorum int
	// Cosigned are checkpoints with cosignatures: what the witnesses
	// serve, or the lines of the log's cosignatures file. Nothing in them
	// is trusted until the log's and the witnesses' signatures check.
	Cosigned [][]byte
}

// cosignedTree is one tree of the log that witnesses cosigned: who, and
// when each did.
type cosignedTree struct {
	size  int64
	root  tlog.Hash
	times map[string]time.Time // by witness
	seen  bool                 // the walk met the series' tree of this size
}

// earliest is the earliest cosignature, and its witness.
func (c *cosignedTree) earliest() (string, time.Time) {
	name, at := "", time.Time{}
	for n, t := range c.times {
		if at.IsZero() || t.Before(at) || t.Equal(at) && n < name {
			name, at = n, t
		}
	}
	return name, at
}

// witnessWalk is what the walk holds the series' tree to: the cosigned
// trees by size, and the largest that a quorum cosigned.
type witnessWalk struct {
	quorum  int
	bySize  map[int64]*cosignedTree
	quorate int64 // the largest size a quorum cosigned; 0 without one
}

// indexCosigned checks each cosigned checkpoint's signatures, the log's
// (with ring, under the origin, when set) and the witnesses', and indexes
// the trees by size. Two trees of one size are a fork the log signed.
func (w *chainWalk) indexCosigned(o *Witnessing) *Problem {
	if o == nil {
		return nil
	}
	ww := &witnessWalk{quorum: o.Quorum, bySize: map[int64]*cosignedTree{}}
	var vs []note.Verifier
	for _, k := range o.Keys {
		vs = append(vs, k)
	}
	for i, text := range o.Cosigned {
		cp, err := w.ring.OpenNote(string(text))
		if err != nil {
			return &Problem{"cosigned checkpoints", i + 1, "the checkpoint is not signed by a public key given: " + safe(err.Error())}
		}
		if w.tree.want != "" && cp.Origin != w.tree.want {
			continue // another replica's
		}
		n, err := note.Open(text, note.VerifierList(vs...))
		if err != nil {
			continue // cosigned by no witness given
		}
		if p := ww.add(cp, n.Sigs, i+1); p != nil {
			return p
		}
	}
	for size, c := range ww.bySize {
		if len(c.times) >= ww.quorum {
			ww.quorate = max(ww.quorate, size)
		}
	}
	w.wit = ww
	return nil
}

// add takes in a tree's cosignatures.
func (ww *witnessWalk) add(cp merkle.Checkpoint, sigs []note.Signature, line int) *Problem {
	c, ok := ww.bySize[cp.Size]
	if !ok {
		c = &cosignedTree{size: cp.Size, root: cp.Root, times: map[string]time.Time{}}
		ww.bySize[cp.Size] = c
	}
	if c.root != cp.Root {
		return &Problem{"cosigned checkpoints", line, fmt.Sprintf("the log signed two trees of %d records, and witnesses cosigned each: the log forked (%s cosigned one, %s the other)", cp.Size, strings.Join(names(c.times), ", "), strings.Join(sigNames(sigs), ", "))}
	}
	for _, s := range sigs {
		t, err := witness.Time(s)
		if err != nil {
			continue
		}
		if prev, ok := c.times[s.Name]; !ok || t.Before(prev) {
			c.times[s.Name] = t
		}
	}
	return nil
}

func names(m map[string]time.Time) []string {
	var out []string
	for n := range m {
		out = append(out, safe(n))
	}
	sort.Strings(out)
	return out
}

func sigNames(sigs []note.Signature) []string {
	var out []string
	for _, s := range sigs {
		out = append(out, safe(s.Name))
	}
	return out
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
		name, at := c.earliest()
		return &Problem{path, n, fmt.Sprintf("the series' tree of %d records is not the one witness %s cosigned at %s: the records were rewritten after that witness saw them, or the log showed it a fork", c.size, safe(name), at.Format(time.RFC3339))}
	}
	return nil
}

// finishWitnessed holds the series to the largest tree a quorum of
// witnesses cosigned, and says how far they prove it.
func (w *chainWalk) finishWitnessed() *Problem {
	if w.wit == nil {
		return nil
	}
	v := w.v
	if w.wit.quorate == 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("no tree of the series was cosigned by a quorum of %d of the witnesses given", w.wit.quorum))
		return nil
	}
	c := w.wit.bySize[w.wit.quorate]
	name, at := c.earliest()
	if !c.seen {
		if w.tree.edge == nil || w.tree.edge.Size() < c.size {
			return &Problem{"", 0, fmt.Sprintf("records up to seq %d are missing: %d witnesses cosigned a tree of %d records (the first, %s, at %s), and the series holds fewer: the end of the trail was cut", c.size, len(c.times), c.size, safe(name), at.Format(time.RFC3339))}
		}
		v.Notes = append(v.Notes, fmt.Sprintf("the tree of %d records the witnesses cosigned could not be held to the series: verification began after the tree's start", c.size))
		return nil
	}
	v.WitnessedTo, v.WitnessedBy, v.WitnessedAt = c.size, len(c.times), at
	return nil
}
