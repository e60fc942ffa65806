package audit

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit/merkle"
)

// TreeSuffix names the tree file beside the log: <log>.tree.
const TreeSuffix = ".tree"

// TreeEdge is the right edge of a log's Merkle tree before a record: the
// number of records the tree held and the hex hashes of its perfect
// subtrees, largest first (merkle.Tree.Edge).
type TreeEdge struct {
	Size  uint64   `json:"size"`
	Edges []string `json:"edges"`
}

// Frontier is the edge as a merkle.Frontier a reader goes on from; an
// edge whose hashes are not hex or do not fit its size is an error.
func (t *TreeEdge) Frontier() (merkle.Frontier, error) {
	hs := make([]tlog.Hash, len(t.Edges))
	for i, e := range t.Edges {
		if n, err := hex.Decode(hs[i][:], []byte(e)); err != nil || n != len(hs[i]) || len(e) != 2*len(hs[i]) {
			return merkle.Frontier{}, fmt.Errorf("the tree edge's hash %d is not 64 hex digits", i+1)
		}
	}
	return merkle.NewFrontier(int64(t.Size), hs)
}

// appendJSON appends the edge's JSON: a number and hex, nothing to escape.
func (t *TreeEdge) appendJSON(b []byte) []byte {
	b = strconv.AppendUint(append(b, `{"size":`...), t.Size, 10)
	b = append(b, `,"edges":[`...)
	for i, e := range t.Edges {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), e...), '"')
	}
	return append(b, "]}"...)
}

// OpenNote opens a C2SP checkpoint note signed by one of the ring's
// public keys under the origin the note names, and reads the checkpoint.
func (r *Keyring) OpenNote(text string) (merkle.Checkpoint, error) {
	origin, _, _ := bytes.Cut([]byte(text), []byte("\n"))
	var vs []note.Verifier
	for _, pub := range r.signing {
		vkey, err := merkle.VerifierKey(string(origin), pub)
		if err != nil {
			return merkle.Checkpoint{}, err
		}
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return merkle.Checkpoint{}, err
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return merkle.Checkpoint{}, errors.New("no public key was given to check the note with")
	}
	return merkle.OpenCheckpoint([]byte(text), vs...)
}

// openTree opens the Merkle tree of the log's records when Config.Origin
// asks for one, and checks that it ends where the log does: its last leaf
// is the log's last record, or the one before it (the process stopped
// between the two writes), which is then added. A tree that ends anywhere
// else (lost, cut, or of another log), or a log that lost records its
// checkpoint file names, cannot continue under the origin: porthole
// refuses to start, as a witness would refuse the fork.
func openTree(cfg Config, rotatable bool, st *resumed) (*merkle.Tree, error) {
	if cfg.Origin == "" {
		return nil, nil
	}
	switch {
	case !rotatable:
		return nil, fmt.Errorf("a Merkle tree (an origin) needs an audit log that is a file, not %s", cfg.Path)
	case cfg.Signer == nil:
		return nil, errors.New("a Merkle tree (an origin) needs the checkpoint signing key: its checkpoints are signed notes")
	case st.missingTo != 0:
		return nil, fmt.Errorf("the audit log lost records %d to %d, which its checkpoint file names: the tree of origin %s cannot go on with a hole; restore the log, or retire this origin and start the log under a new one (docs/audit.md)", st.missingFrom, st.missingTo, cfg.Origin)
	}
	tree, err := merkle.OpenTree(cfg.Path + TreeSuffix)
	if err != nil {
		return nil, fmt.Errorf("opening the audit tree: %w", err)
	}
	if err := reconcileTree(tree, st, cfg); err != nil {
		tree.Close()
		return nil, err
	}
	return tree, nil
}

// reconcileTree checks the tree against the log's last lines, adding the
// last one when the tree is one behind.
func reconcileTree(tree *merkle.Tree, st *resumed, cfg Config) error {
	if st.last == nil {
		if tree.Size() == 0 {
			return nil
		}
		return fmt.Errorf("the audit tree holds %d records and the log none: the log was lost; restore it, or retire origin %s and start the log under a new one (docs/audit.md)", tree.Size(), cfg.Origin)
	}
	if tree.Size() == 0 {
		if st.beforeLast == nil && isGenesis(st.last) {
			return tree.Append(st.last) // stopped between the genesis and its leaf
		}
		return fmt.Errorf("the audit log %s has records but no tree: a tree under origin %s begins with a new log; move the log and its rotated files aside (they verify as they are) or restore the tree file %s%s", cfg.Path, cfg.Origin, cfg.Path, TreeSuffix)
	}
	leaf, err := tree.LeafHash(tree.Size() - 1)
	if err != nil {
		return fmt.Errorf("reading the audit tree: %w", err)
	}
	if leaf == tlog.RecordHash(st.last) {
		return nil
	}
	if st.beforeLast == nil {
		// The file holds one line (an anchor after a rotation): the line
		// before it is the newest rotated file's last.
		st.beforeLast = lastLineRotated(cfg.Path)
	}
	if st.beforeLast != nil && leaf == tlog.RecordHash(st.beforeLast) {
		return tree.Append(st.last)
	}
	return fmt.Errorf("the audit tree (%d records) does not end at the log's last record: it was lost, cut or belongs to another log; restore it, or retire origin %s and start the log under a new one (docs/audit.md)", tree.Size(), cfg.Origin)
}

// isGenesis reports whether line is a new log's first record.
func isGenesis(line []byte) bool {
	e, err := ParseLineKey(line, nil)
	return err == nil && e.Kind == KindChainStart && e.Seq == 1 && e.Prev == ""
}

// lastLineRotated is the last complete line of the newest file rotated
// aside from path, or nil.
func lastLineRotated(path string) []byte {
	files, _, err := rotatedFiles(path)
	if err != nil || len(files) == 0 {
		return nil
	}
	f, err := os.Open(files[len(files)-1])
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return nil
	}
	lines, partial, err := tailLines(f, fi.Size())
	if err != nil || partial && len(lines) < 2 {
		return nil
	}
	if partial {
		return lines[len(lines)-2]
	}
	return lines[len(lines)-1]
}

// appendToTree adds a written line to the tree. A tree that cannot take it
// stops taking records: the log goes on (its records are written), but no
// checkpoint carries a note from then on, the problem is reported (so the
// gateway is not ready), and the next start refuses the tree.
func (l *Log) appendToTree(line []byte) {
	if l.tree == nil || l.treeErr != nil {
		return
	}
	if err := l.tree.Append(line[:len(line)-1]); err != nil {
		l.treeFailed(err)
	}
}

func (l *Log) treeFailed(err error) {
	l.treeErr = err
	l.health.raise(problemTree, "the audit tree stopped taking records; checkpoints carry no tree note until porthole restarts with a tree that ends where the log does: "+err.Error())
}

// treeEdge is the tree's right edge as it is, for a chain-start or an
// anchor record; nil without a tree.
func (l *Log) treeEdge() *TreeEdge {
	if l.tree == nil || l.treeErr != nil {
		return nil
	}
	hs, err := l.tree.Edge(l.tree.Size())
	if err != nil {
		l.treeFailed(err)
		return nil
	}
	e := &TreeEdge{Size: uint64(l.tree.Size()), Edges: make([]string, len(hs))}
	for i, h := range hs {
		e.Edges[i] = hex.EncodeToString(h[:])
	}
	return e
}

// treeNote is the signed C2SP checkpoint note of the tree as it is, or ""
// without a tree.
func (l *Log) treeNote() string {
	if l.tree == nil || l.treeErr != nil {
		return ""
	}
	root, err := l.tree.Root(l.tree.Size())
	if err == nil {
		var note []byte
		if note, err = merkle.SignCheckpoint(merkle.Checkpoint{Origin: l.cfg.Origin, Size: l.tree.Size(), Root: root},
			merkle.NewSigner(l.cfg.Origin, l.cfg.Signer)); err == nil {
			return string(note)
		}
	}
	l.treeFailed(err)
	return ""
}

// syncTree makes the tree's hashes durable with the log's records.
func (l *Log) syncTree() error {
	if l.tree == nil {
		return nil
	}
	return l.tree.Sync()
}
