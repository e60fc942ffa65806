package review

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/merkle"
)

// RecordProof is one record of a trail kept as a Merkle tree, with the
// proof that it is leaf Index of the tree a signed checkpoint note names:
// what a reviewer hands on, and anyone with the log's public key checks
// without the trail. Its text form is a C2SP tlog-proof
// (c2sp.org/tlog-proof@v1) whose extra data is the record's line.
type RecordProof struct {
	Line   []byte // the record's line, without its newline
	Index  int64
	Hashes []tlog.Hash
	Note   string
}

const proofHeader = "c2sp.org/tlog-proof@v1"

// Marshal is the proof's C2SP tlog-proof text.
func (p *RecordProof) Marshal() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nextra %s\nindex %d\n", proofHeader, base64.StdEncoding.EncodeToString(p.Line), p.Index)
	for _, h := range p.Hashes {
		fmt.Fprintf(&b, "%s\n", base64.StdEncoding.EncodeToString(h[:]))
	}
	b.WriteByte('\n')
	b.WriteString(p.Note)
	return b.Bytes()
}

// ParseRecordProof reads a proof's text; nothing in it is trusted until
// Check.
func ParseRecordProof(text []byte) (*RecordProof, error) {
	head, note, ok := bytes.Cut(text, []byte("\n\n"))
	if !ok {
		return nil, errors.New("not a tlog-proof: no blank line before the checkpoint")
	}
	lines := strings.Split(string(head), "\n")
	if len(lines) < 3 || lines[0] != proofHeader {
		return nil, fmt.Errorf("not a tlog-proof: it does not begin %q", proofHeader)
	}
	extra, ok := strings.CutPrefix(lines[1], "extra ")
	line, err := base64.StdEncoding.DecodeString(extra)
	if !ok || err != nil {
		return nil, errors.New("the proof carries no record (its extra data, base64)")
	}
	index, ok := strings.CutPrefix(lines[2], "index ")
	n, err := strconv.ParseInt(index, 10, 64)
	if !ok || err != nil || n < 0 {
		return nil, errors.New("the proof names no record index")
	}
	p := &RecordProof{Line: line, Index: n, Note: string(note)}
	for i, l := range lines[3:] {
		h, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(h) != len(tlog.Hash{}) {
			return nil, fmt.Errorf("the proof's hash %d is not 32 bytes of base64", i+1)
		}
		p.Hashes = append(p.Hashes, tlog.Hash(h))
	}
	return p, nil
}

// Check verifies the proof with the ring's public keys alone: the note
// is signed by one of them, and the record is leaf Index of the tree it
// names. It returns the checkpoint and the record as its line reads (its
// HMAC unchecked: the proof, not the HMAC key, vouches for it).
func (p *RecordProof) Check(ring *audit.Keyring) (merkle.Checkpoint, audit.Entry, error) {
	cp, err := ring.OpenNote(p.Note)
	if err != nil {
		return cp, audit.Entry{}, fmt.Errorf("the checkpoint note is not genuine: %w", err)
	}
	if p.Index >= cp.Size {
		return cp, audit.Entry{}, fmt.Errorf("record %d is beyond the tree of %d records the note names", p.Index, cp.Size)
	}
	if err := tlog.CheckRecord(p.Hashes, cp.Size, cp.Root, p.Index, merkle.LeafHash(p.Line)); err != nil {
		return cp, audit.Entry{}, fmt.Errorf("the record is not leaf %d of the signed tree of %d records: %w", p.Index, cp.Size, err)
	}
	e, err := audit.ParseLineKey(p.Line, nil)
	if err != nil {
		return cp, e, fmt.Errorf("the proven leaf is no audit record: %w", err)
	}
	if int64(e.Seq) != p.Index+1 {
		return cp, e, fmt.Errorf("the proven leaf %d holds a record of seq %d: record n of a trail is leaf n-1", p.Index, e.Seq)
	}
	return cp, e, nil
}

// Pick says which record to prove: the record of sequence number Seq, or
// the record of Kind (call when empty) of request RequestID.
type Pick struct {
	Seq       uint64
	RequestID string
	Kind      audit.Kind
}

func (k Pick) matches(e audit.Entry) bool {
	if k.Seq != 0 {
		return e.Seq == k.Seq
	}
	return e.RequestID == k.RequestID && e.Kind == cmp.Or(k.Kind, audit.KindCall)
}

// Prove makes the proof of the record pick names, from a series of files
// kept as a Merkle tree and its tree file, against the latest signed note
// the series' checkpoint records hold. Record n of the series (its
// sequence number) is leaf n-1: the tree file's leaf must be that very
// line, and the note's root the tree file's, or Prove refuses. Neither
// the HMACs nor the note's signature are checked: the proof is checked
// by whoever it is given to.
func Prove(paths []string, tree *merkle.Tree, pick Pick) (*RecordProof, error) {
	files, problem, err := readChainOrder(paths)
	if err != nil {
		return nil, err
	}
	if problem != nil {
		return nil, errors.New(problem.String())
	}
	line, seq, err := findRecord(files, pick)
	if err != nil {
		return nil, err
	}
	index := int64(seq) - 1
	if leaf, err := tree.Leaf(index); err != nil || leaf != merkle.LeafHash(line) {
		return nil, fmt.Errorf("leaf %d of the tree file is not the record of seq %d (%v): the tree file is of another log, or the log was not kept as a tree from its genesis", index, seq, err)
	}
	note, cp, err := latestNote(files, index)
	if err != nil {
		return nil, err
	}
	if root, err := tree.Root(cp.Size); err != nil || root != cp.Root {
		return nil, fmt.Errorf("the tree file does not hold the tree of %d records the latest note signed (%v)", cp.Size, err)
	}
	hashes, err := tree.ProveRecord(index, cp.Size)
	if err != nil {
		return nil, err
	}
	return &RecordProof{Line: bytes.Clone(line), Index: index, Hashes: hashes, Note: note}, nil
}

// findRecord is the first record pick matches, read by its shape.
func findRecord(files []*audit.LogFile, pick Pick) (line []byte, seq uint64, err error) {
	for i, f := range files {
		if pick.Seq != 0 && i+1 < len(files) && files[i+1].First <= pick.Seq {
			continue // a later file begins at or before it
		}
		err := f.Each(func(_ int, l []byte, _ bool) error {
			if e, err := audit.ParseLineKey(l, nil); err == nil && pick.matches(e) {
				line, seq = bytes.Clone(l), e.Seq
				return audit.ErrStopWalk
			}
			return nil
		})
		if err != nil || line != nil {
			return line, seq, err
		}
	}
	if pick.Seq != 0 {
		return nil, 0, fmt.Errorf("the series holds no record of seq %d", pick.Seq)
	}
	return nil, 0, fmt.Errorf("the series holds no %s record of request %s", cmp.Or(pick.Kind, audit.KindCall), strconv.QuoteToASCII(pick.RequestID))
}

// latestNote is the latest signed tree note of the series' checkpoint
// records, read from the newest file back, which must cover leaf index.
func latestNote(files []*audit.LogFile, index int64) (string, merkle.Checkpoint, error) {
	for i := len(files) - 1; i >= 0; i-- {
		note := ""
		err := files[i].Each(func(_ int, l []byte, _ bool) error {
			if e, err := audit.ParseLineKey(l, nil); err == nil && e.Checkpoint != nil && e.Checkpoint.Note != "" {
				note = e.Checkpoint.Note
			}
			return nil
		})
		if err != nil {
			return "", merkle.Checkpoint{}, err
		}
		if note == "" {
			continue
		}
		text, _, _ := strings.Cut(note, "\n\n")
		cp, err := merkle.ParseText(text + "\n")
		if err != nil {
			return "", cp, fmt.Errorf("the latest checkpoint's note: %w", err)
		}
		if cp.Size <= index {
			return "", cp, fmt.Errorf("the latest signed tree holds %d records: record %d comes after it; prove it after the next checkpoint", cp.Size, index+1)
		}
		return note, cp, nil
	}
	return "", merkle.Checkpoint{}, errors.New("no checkpoint of the series carries a signed tree note: the log was not kept as a Merkle tree (PORTHOLE_AUDIT_ORIGIN)")
}
