package audit

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit/merkle"
	"github.com/porthole-dev/porthole/audit/witness"
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
	if len(t.Edges) > 64 {
		return merkle.Frontier{}, fmt.Errorf("the tree edge holds %d hashes; a tree's holds at most 64", len(t.Edges))
	}
	hs := make([]tlog.Hash, len(t.Edges))
	for i, e := range t.Edges {
		// The length first: hex.Decode writes as much as it is given.
		if len(e) != 2*len(hs[i]) {
			return merkle.Frontier{}, fmt.Errorf("the tree edge's hash %d is not 64 hex digits", i+1)
		}
		if _, err := hex.Decode(hs[i][:], []byte(e)); err != nil {
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
// Security: the origin is the note's, and reaches errors and a terminal;
// one that merkle.CheckOrigin refuses is refused before anything else,
// so that no error quotes it raw (note's errors quote key names as they
// are).
func (r *Keyring) OpenNote(text string) (merkle.Checkpoint, error) {
	origin, _, _ := bytes.Cut([]byte(text), []byte("\n"))
	if err := merkle.CheckOrigin(string(origin)); err != nil {
		return merkle.Checkpoint{}, fmt.Errorf("the note's origin: %v", err)
	}
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
	case cfg.CheckpointPath == "":
		// Security: the file a restart reads the latest checkpoint from,
		// and synced before any note leaves the process: without it a
		// cut log's tree would be signed again, of other records.
		return nil, errors.New("a Merkle tree (an origin) needs a checkpoint file (PORTHOLE_AUDIT_CHECKPOINT_FILE)")
	case st.noteOrigin != "" && st.noteOrigin != cfg.Origin:
		return nil, fmt.Errorf("the checkpoint file's latest note is of origin %s, not %s: a trail keeps its origin; to start a trail under another, retire this one (docs/audit.md)", strconv.QuoteToASCII(st.noteOrigin), cfg.Origin)
	case st.missingTo != 0:
		return nil, fmt.Errorf("the audit log lost records %d to %d, which its checkpoint file names: the tree of origin %s cannot go on with a hole; restore the log, or retire this origin and start the log under a new one (docs/audit.md)", st.missingFrom, st.missingTo, cfg.Origin)
	}
	tree, err := merkle.OpenTree(cfg.Path + TreeSuffix)
	if errors.Is(err, merkle.ErrTorn) {
		// A crash or a full disk in the middle of an append.
		if err = merkle.CutTorn(cfg.Path + TreeSuffix); err == nil {
			tree, err = merkle.OpenTree(cfg.Path + TreeSuffix)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("opening the audit tree: %w", err)
	}
	if err := reconcileTree(tree, st, cfg); err != nil {
		tree.Close()
		return nil, err
	}
	return tree, nil
}

// reconcileTree checks the tree against the log's last record, of
// sequence number n, which is leaf n-1. A tree ahead of the log is cut
// back to it, and one behind takes the log's records it lacks: the tree
// file and the log are synced together, and a power loss may cost either
// its last second, never a record a checkpoint's note holds (a note is
// signed only of what was synced). The tree's leaf where the two meet must
// be the log's very line, or the tree is another's.
func reconcileTree(tree *merkle.Tree, st *resumed, cfg Config) error {
	if st.last == nil && tree.Size() > 0 {
		// The current file holds no whole record (a torn first line):
		// the newest rotated file's last is the log's.
		st.last = lastLineRotated(cfg.Path)
	}
	if st.last == nil {
		if tree.Size() == 0 {
			return nil
		}
		return fmt.Errorf("the audit tree holds %d records and the log none: the log was lost; restore it, or retire origin %s and start the log under a new one (docs/audit.md)", tree.Size(), cfg.Origin)
	}
	e, _ := ParseLineKey(st.last, nil) // a line lastRecordLine took
	n := int64(e.Seq)
	if tree.Size() >= n {
		if leaf, err := tree.Leaf(n - 1); err != nil || leaf != merkle.LeafHash(st.last) {
			return errNotItsTree(tree, cfg)
		}
		return tree.Truncate(n)
	}
	if tree.Size() == 0 && !isGenesis(st.last) {
		return fmt.Errorf("the audit log %s has records but no tree: a tree under origin %s begins with a new log; move the log and its rotated files aside (they verify as they are) or restore the tree file %s%s", cfg.Path, cfg.Origin, cfg.Path, TreeSuffix)
	}
	lines, err := linesFrom(cfg.Path, tree.Size())
	if err != nil {
		return err
	}
	return catchUp(tree, lines, n, cfg)
}

// catchUp adds to a tree behind the log the records it lacks, up to the
// n'th: lines are the log's records from the tree's last (or from the
// genesis, for an empty tree), in order.
func catchUp(tree *merkle.Tree, lines [][]byte, n int64, cfg Config) error {
	if tree.Size() > 0 {
		leaf, err := tree.Leaf(tree.Size() - 1)
		if err != nil || len(lines) == 0 || leaf != merkle.LeafHash(lines[0]) {
			return errNotItsTree(tree, cfg)
		}
		lines = lines[1:]
	}
	if int64(len(lines)) != n-tree.Size() {
		return errNotItsTree(tree, cfg)
	}
	for _, l := range lines {
		if err := tree.Append(l); err != nil {
			return fmt.Errorf("adding the log's records to the audit tree: %w", err)
		}
	}
	return nil
}

func errNotItsTree(tree *merkle.Tree, cfg Config) error {
	return fmt.Errorf("the audit tree (%d records) does not meet the log's records: it was lost, cut or belongs to another log; restore it, or retire origin %s and start the log under a new one (docs/audit.md)", tree.Size(), cfg.Origin)
}

// linesFrom is the records of sequence number from (or 1, when from is
// 0) on, in the newest file rotated aside from path and in path: what a
// tree behind the log lacks, which the last second's writes bound.
func linesFrom(path string, from int64) ([][]byte, error) {
	var paths []string
	if rotated, _, err := rotatedFiles(path); err == nil && len(rotated) > 0 {
		paths = append(paths, rotated[len(rotated)-1])
	}
	var lines [][]byte
	for _, p := range append(paths, path) {
		f, _, err := ReadLogFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the audit log for its tree: %w", err)
		}
		err = f.Each(func(_ int, l []byte, _ bool) error {
			if e, err := ParseLineKey(l, nil); err == nil && int64(e.Seq) >= max(from, 1) {
				lines = append(lines, bytes.Clone(l))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading the audit log for its tree: %w", err)
		}
	}
	return lines, nil
}

// lastLineRotated is the last line with a record's shape of the newest
// file rotated aside from path, or nil.
func lastLineRotated(path string) []byte {
	files, _, err := rotatedFiles(path)
	if err != nil || len(files) == 0 {
		return nil
	}
	line, _ := lastRecordLineOf(files[len(files)-1])
	return line
}

// isGenesis reports whether line is a new log's first record.
func isGenesis(line []byte) bool {
	e, err := ParseLineKey(line, nil)
	return err == nil && e.Kind == KindChainStart && e.Seq == 1 && e.Prev == ""
}

// appendToTree adds a written line to the tree. A tree that cannot take it
// stops taking records: the log goes on (its records are written), but no
// checkpoint carries a note from then on, and the problem is reported (so
// the gateway is not ready); the next start adds the records it lacks,
// when the current and newest rotated files still hold them.
func (l *Log) appendToTree(digest [32]byte) {
	if l.tree == nil || l.treeErr != nil {
		return
	}
	if err := l.tree.AppendDigest(digest); err != nil {
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

// CosignaturesSuffix names the file beside the log that keeps the
// witnesses' cosignatures: <log>.cosignatures.
const CosignaturesSuffix = ".cosignatures"

// BesideTheLog reports whether path names a file porthole keeps beside a
// log that is not one of its files (its tree, its cosignatures), which a
// glob of audit.log* names too.
func BesideTheLog(path string) bool {
	return strings.HasSuffix(path, TreeSuffix) || strings.HasSuffix(path, CosignaturesSuffix)
}

// errNoQuorum refuses a call record while too few witnesses keep up.
var errNoQuorum = fmt.Errorf("%w: too few witnesses have cosigned the audit trail's checkpoints in time", ErrUnavailable)

// openSender starts sending checkpoints to the witnesses, when there are
// any; they witness a tree, and so need an origin.
func openSender(cfg Config) (*witness.Sender, error) {
	if len(cfg.Witnesses) == 0 {
		return nil, nil
	}
	if cfg.Origin == "" {
		return nil, errors.New("witnesses cosign a log kept as a Merkle tree: set an origin")
	}
	if cfg.WitnessQuorum < 0 || cfg.WitnessQuorum > len(cfg.Witnesses) {
		return nil, fmt.Errorf("a quorum of %d of %d witnesses", cfg.WitnessQuorum, len(cfg.Witnesses))
	}
	client := cfg.WitnessClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return witness.NewSender(cfg.Witnesses, cfg.Path+TreeSuffix, cfg.Path+CosignaturesSuffix, client)
}

// checkQuorum raises, with WitnessMaxLag, the problem that refuses calls
// while fewer than WitnessQuorum witnesses have cosigned every checkpoint
// sent more than WitnessMaxLag ago, and clears it once they have.
func (l *Log) checkQuorum() {
	if l.sender == nil || l.cfg.WitnessMaxLag <= 0 {
		return
	}
	now := l.cfg.Now()
	keeping := 0
	var behind []string
	for _, s := range l.sender.Statuses() {
		if s.Behind == 0 || now.Sub(s.BehindSince) < l.cfg.WitnessMaxLag {
			keeping++
			continue
		}
		// The reason of a try is the witness's words: /readyz says it
		// redacted and quoted on the witness's own line, not here.
		behind = append(behind, fmt.Sprintf("%s (cosigned %d records; behind since %s)", s.Name, s.Size, s.BehindSince.UTC().Format(time.RFC3339)))
	}
	if keeping >= l.cfg.WitnessQuorum {
		l.health.clear(problemWitnesses)
		return
	}
	l.health.raise(problemWitnesses, fmt.Sprintf("%d of the %d witnesses needed have cosigned the audit trail's checkpoints within %s: calls are refused; behind: %s", keeping, l.cfg.WitnessQuorum, l.cfg.WitnessMaxLag, strings.Join(behind, "; ")))
}

// Witnesses is how far each witness has cosigned the trail; nil without
// witnesses.
func (l *Log) Witnesses() []witness.Status {
	if l.sender == nil {
		return nil
	}
	return l.sender.Statuses()
}
