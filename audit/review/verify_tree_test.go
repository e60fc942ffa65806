package review

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/merkle"
)

// TestATreeFileIsHeldToEachNoteByAConsistencyProof: a tree file whose
// roots at two notes' sizes are right, but one of whose hashes the
// consistency proof between them needs is not (the subtree of leaves 6
// and 7, which neither root of 6 nor of 8 leaves is read from), is found
// by the proof, and only by it.
func TestATreeFileIsHeldToEachNoteByAConsistencyProof(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log.tree")
	tree, err := merkle.OpenTree(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	var f merkle.Frontier
	var notes []merkle.Checkpoint
	for i := range 8 {
		line := []byte(fmt.Sprintf(`{"seq":%d}`, i+1))
		if err := tree.Append(line); err != nil {
			t.Fatal(err)
		}
		f.Append(line)
		if f.Size() == 6 || f.Size() == 8 {
			notes = append(notes, merkle.Checkpoint{Origin: "o", Size: f.Size(), Root: f.Root()})
		}
	}
	check := func() *Problem {
		w := &chainWalk{tree: treeWalk{file: tree}}
		for _, cp := range notes {
			if p := w.checkTreeFile(cp); p != nil {
				return p
			}
			w.tree.last = &cp
		}
		return nil
	}
	if p := check(); p != nil {
		t.Fatalf("the tree file as written: %s", p)
	}
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	file.WriteAt([]byte{0xff}, 32*tlog.StoredHashIndex(1, 3))
	file.Close()
	for _, cp := range notes {
		if root, err := tree.Root(cp.Size); err != nil || root != cp.Root {
			t.Fatalf("the root of %d changed: the test does not isolate the proof", cp.Size)
		}
	}
	if p := check(); p == nil || !strings.Contains(p.What, "no consistency proof") {
		t.Fatalf("a hash only the consistency proof reads, changed: %v", p)
	}
}

// FuzzARecordProofReadsAsItIsWritten: a proof ParseRecordProof reads is
// written back by Marshal as it was read, and Check refuses it (no key
// signed it) without a panic; anything else is refused.
func FuzzARecordProofReadsAsItIsWritten(f *testing.F) {
	p := RecordProof{Line: []byte(`{"seq":1}`), Index: 0, Hashes: []tlog.Hash{{1}}, Note: "o\n1\n" + strings.Repeat("A", 43) + "=\n\n— o AAAA\n"}
	f.Add(p.Marshal())
	f.Add([]byte("c2sp.org/tlog-proof@v1\nindex 3\n\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		p, err := ParseRecordProof(text)
		if err != nil {
			return
		}
		again, err := ParseRecordProof(p.Marshal())
		if err != nil || string(again.Marshal()) != string(p.Marshal()) || again.Index != p.Index {
			t.Fatalf("%q read back as %+v: %v", text, again, err)
		}
		if _, _, err := p.Check(audit.NewKeyring(nil, nil)); err == nil {
			t.Fatal("a proof checked with no key")
		}
	})
}
