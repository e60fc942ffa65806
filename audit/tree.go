package audit

import (
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit/merkle"
)

// treeSuffix names the tree file beside the log: <log>.tree.
const treeSuffix = ".tree"

// openTree opens the Merkle tree of the log's records when Config.Origin
// asks for one, and checks that it ends where the log does: its last leaf
// is the log's last record, or the one before it (the process stopped
// between the two writes), which is then added. A tree that ends anywhere
// else (lost, cut, or of another log) cannot continue under the origin:
// porthole refuses to start, as a witness would refuse the fork.
func openTree(cfg Config, rotatable bool, st *resumed) (*merkle.Tree, error) {
	if cfg.Origin == "" {
		return nil, nil
	}
	switch {
	case !rotatable:
		return nil, fmt.Errorf("a Merkle tree (an origin) needs an audit log that is a file, not %s", cfg.Path)
	case cfg.Signer == nil:
		return nil, errors.New("a Merkle tree (an origin) needs the checkpoint signing key: its checkpoints are signed notes")
	case cfg.MaxAge > 0:
		return nil, errors.New("a Merkle tree (an origin) cannot yet be pruned: set no maximum age")
	}
	tree, err := merkle.OpenTree(cfg.Path + treeSuffix)
	if err != nil {
		return nil, fmt.Errorf("opening the audit tree: %w", err)
	}
	if err := reconcileTree(tree, st); err != nil {
		tree.Close()
		return nil, err
	}
	return tree, nil
}

// reconcileTree checks the tree against the log's last lines, adding the
// last one when the tree is one behind.
func reconcileTree(tree *merkle.Tree, st *resumed) error {
	if tree.Size() == 0 && st.last == nil {
		return nil
	}
	var leaf tlog.Hash
	if tree.Size() > 0 {
		hs, err := tree.ReadHashes([]int64{tlog.StoredHashIndex(0, tree.Size()-1)})
		if err != nil {
			return fmt.Errorf("reading the audit tree: %w", err)
		}
		leaf = hs[0]
	}
	switch {
	case st.last != nil && tree.Size() > 0 && leaf == tlog.RecordHash(st.last):
		return nil
	case st.last != nil && (tree.Size() == 0 && st.beforeLast == nil || st.beforeLast != nil && tree.Size() > 0 && leaf == tlog.RecordHash(st.beforeLast)):
		return tree.Append(st.last)
	}
	return fmt.Errorf("the audit tree (%d records) does not end at the log's last record: it was lost, cut or belongs to another log; restore it, or retire this origin and start the log under a new one (docs/audit.md)", tree.Size())
}

// appendToTree adds a written line to the tree. A tree that cannot take it
// stops taking records: the log goes on (its records are written), but no
// checkpoint carries a note from then on, and the problem is reported.
func (l *Log) appendToTree(line []byte) {
	if l.tree == nil || l.treeErr != nil {
		return
	}
	if err := l.tree.Append(line[:len(line)-1]); err != nil {
		l.treeErr = err
		l.health.raise(problemTree, "the audit tree could not take a record: checkpoints carry no tree note until porthole restarts with a tree that ends where the log does: "+err.Error())
	}
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
	l.treeErr = err
	l.health.raise(problemTree, "the audit tree's checkpoint could not be made: "+err.Error())
	return ""
}

// syncTree makes the tree's hashes durable with the log's records.
func (l *Log) syncTree() error {
	if l.tree == nil {
		return nil
	}
	return l.tree.Sync()
}
