package audit

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// A Checkpoint is porthole's signed statement that the record of sequence
// number Seq in the chain Chain is the line whose SHA-256 is Hash. Given
// the checkpoint and the public key, a verifier can prove that a log holds
// every record up to Seq unchanged, and nobody without the private key can
// make one. porthole writes each checkpoint three times: as a record of the
// log, to a checkpoint file on another volume, and as a line of the operations
// log, which a cluster's log collection keeps out of the pod's reach.
//
// The JSON form, one object per line, is the checkpoint file's format and the
// operations log's "checkpoint" field:
//
//	{"chain":"…","seq":120,"hash":"…","time":"2026-12-01T10:00:00Z","kid":"…","sig":"…"}
type Checkpoint struct {
	Chain string    `json:"chain"` // the chain's identity, made at its genesis
	Seq   uint64    `json:"seq"`
	Hash  string    `json:"hash"` // hex SHA-256 of the line of Seq, without its newline
	Time  time.Time `json:"time"`
	KeyID string    `json:"kid"` // SigningKeyID of the key that signed
	// Sig is the hex Ed25519 signature of statement: hex, so that no
	// redactor's detector can take part of it for a credential when the
	// operations log carries it.
	Sig string `json:"sig"`
	// Note, with Config.Origin, is the C2SP tlog-checkpoint signed note of
	// the log's Merkle tree up to and including record Seq (audit/merkle):
	// signed on its own, with the same key, so that it can be handed on
	// and checked without porthole's code.
	Note string `json:"note,omitempty"`
}

// The first line of what a signature covers says what is signed, so that
// a checkpoint's signature cannot be passed off as a pruned record's.
const (
	labelCheckpoint = "porthole audit checkpoint v1"
	LabelPruned     = "porthole audit pruned v1"
)

// statement is what a checkpoint's signature covers: the label and every
// field but the signature, in a fixed text form, so that re-encoding the
// JSON (a log collector may reorder members) cannot break a signature.
func (c *Checkpoint) statement(label string) []byte {
	b := append([]byte(label), '\n')
	b = append(append(append(b, "chain "...), c.Chain...), '\n')
	b = append(strconv.AppendUint(append(b, "seq "...), c.Seq, 10), '\n')
	b = append(append(append(b, "hash "...), c.Hash...), '\n')
	b = append(c.Time.UTC().AppendFormat(append(b, "time "...), time.RFC3339Nano), '\n')
	return append(append(append(b, "kid "...), c.KeyID...), '\n')
}

// sign fills in KeyID and Sig, signing as a checkpoint.
func (c *Checkpoint) sign(priv ed25519.PrivateKey) { c.signAs(labelCheckpoint, priv) }

func (c *Checkpoint) signAs(label string, priv ed25519.PrivateKey) {
	c.KeyID = SigningKeyID(priv.Public().(ed25519.PublicKey))
	c.Sig = hex.EncodeToString(ed25519.Sign(priv, c.statement(label)))
}

var (
	errUnknownSigner = errors.New("signed by a key the verifier was not given")
	errBadSignature  = errors.New("the signature does not match: the checkpoint was forged or edited")
)

// Check verifies the signature of a checkpoint with the ring's key of its
// id.
func (c *Checkpoint) Check(ring *Keyring) error { return c.CheckAs(labelCheckpoint, ring) }

func (c *Checkpoint) CheckAs(label string, ring *Keyring) error {
	pub, ok := ring.signing[c.KeyID]
	if !ok {
		return fmt.Errorf("%w (key id %q)", errUnknownSigner, c.KeyID)
	}
	sig, err := hex.DecodeString(c.Sig)
	if err != nil || !ed25519.Verify(pub, c.statement(label), sig) {
		return errBadSignature
	}
	return nil
}

// MarshalLine is the checkpoint as one line of its JSON form, in ASCII:
// a note's signature lines begin with an em dash, which is escaped, so
// that a checkpoint record stays a line of printable ASCII.
func (c *Checkpoint) MarshalLine() []byte {
	b, _ := json.Marshal(c)
	out := make([]byte, 0, len(b)+8)
	for _, r := range string(b) {
		if r < utf8.RuneSelf {
			out = append(out, byte(r))
			continue
		}
		for _, u := range utf16.Encode([]rune{r}) {
			out = fmt.Appendf(out, `\u%04x`, u)
		}
	}
	return append(out, '\n')
}

// ReadCheckpoints reads a checkpoints file: one JSON checkpoint per line,
// as the checkpoint file holds them or as a reviewer collected them from the
// operations log. Blank lines are skipped; so is any other line that is not
// a checkpoint (a checkpoint file write cut short leaves one), and skipped holds
// its line number, so a reviewer knows what was not read. Nothing in a line
// is trusted until its signature is checked.
func ReadCheckpoints(path string) (cps []Checkpoint, skipped []int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var c Checkpoint
		d := json.NewDecoder(bytes.NewReader(line))
		d.DisallowUnknownFields()
		if err := d.Decode(&c); err != nil || d.More() || c.Chain == "" || c.Hash == "" || c.Sig == "" {
			skipped = append(skipped, n)
			continue
		}
		cps = append(cps, c)
	}
	return cps, skipped, sc.Err()
}

// ErrWitnessOfSeveralChains is a checkpoint file that holds checkpoints of
// more than one chain, read for a log that names none: it is shared with
// another replica's log, and porthole cannot tell which is its own.
var ErrWitnessOfSeveralChains = errors.New("the checkpoint file holds checkpoints of several chains: each replica needs a checkpoint file of its own")

// witnessedLatest is the checkpoint of the largest sequence number in a
// checkpoint file of the given chain (of its only chain when chain is ""), or
// nil when there is none or no file. porthole reads it at a restart only to
// continue after it: it is porthole's own file, and its signatures are not
// checked here (one signed by a signing key since rotated counts too), so
// that a sequence number it witnessed is never used again.
func witnessedLatest(path, chain string) (*Checkpoint, error) {
	cps, _, err := ReadCheckpoints(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var latest *Checkpoint
	chains := map[string]bool{}
	for i := range cps {
		chains[cps[i].Chain] = true
		if (chain == "" || cps[i].Chain == chain) && (latest == nil || cps[i].Seq > latest.Seq) {
			latest = &cps[i]
		}
	}
	if chain == "" && len(chains) > 1 {
		return nil, ErrWitnessOfSeveralChains
	}
	return latest, nil
}
