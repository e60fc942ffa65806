package merkle

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoint is a tree's size and root under its origin: the body of a
// C2SP tlog-checkpoint note,
//
//	<origin>
//	<size, in decimal>
//	<root hash, in standard base64>
//
// The origin names one series of one trail, known before it starts (a
// StatefulSet ordinal's), never made anew at a restart: a trail written
// again from the start under the old origin is a fork a witness refuses.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// MaxOriginBytes bounds an origin: it is the first line of every
// checkpoint note and the name of the key that signs it.
const MaxOriginBytes = 255

// CheckOrigin refuses what porthole does not take for an origin: more than
// MaxOriginBytes, or anything but printable ASCII without spaces or +
// (the origin is also a note key's name, which may hold no +). Every
// origin a reader prints has passed it, so none can carry a terminal
// escape or a bidi override.
func CheckOrigin(origin string) error {
	if origin == "" || len(origin) > MaxOriginBytes {
		return fmt.Errorf("it is %d bytes long; an origin has 1 to %d", len(origin), MaxOriginBytes)
	}
	for _, r := range origin {
		if r <= ' ' || r > '~' || r == '+' {
			return fmt.Errorf("it holds %s; an origin is printable ASCII without spaces or + (such as example.com/porthole/audit-0)", strconv.QuoteToASCII(string(r)))
		}
	}
	return nil
}

// Text is the checkpoint's note text.
func (c Checkpoint) Text() string {
	return c.Origin + "\n" + strconv.FormatInt(c.Size, 10) + "\n" + base64.StdEncoding.EncodeToString(c.Root[:]) + "\n"
}

// ParseText reads a checkpoint's note text; extension lines after the
// root are refused (porthole writes none).
func ParseText(text string) (Checkpoint, error) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return Checkpoint{}, errors.New("a checkpoint is three lines: origin, size and root")
	}
	origin, sizeText, rootText := strings.TrimSuffix(lines[0], "\n"), strings.TrimSuffix(lines[1], "\n"), strings.TrimSuffix(lines[2], "\n")
	if err := CheckOrigin(origin); err != nil {
		return Checkpoint{}, fmt.Errorf("a checkpoint's origin: %v", err)
	}
	size, err := strconv.ParseInt(sizeText, 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != sizeText {
		return Checkpoint{}, fmt.Errorf("a checkpoint's size %s is malformed", strconv.QuoteToASCII(sizeText))
	}
	root, err := base64.StdEncoding.DecodeString(rootText)
	// Canonical only: a root written two ways would make one checkpoint
	// two texts.
	if err != nil || len(root) != len(tlog.Hash{}) || base64.StdEncoding.EncodeToString(root) != rootText {
		return Checkpoint{}, fmt.Errorf("a checkpoint's root %s is not a base64 SHA-256", strconv.QuoteToASCII(rootText))
	}
	c := Checkpoint{Origin: origin, Size: size}
	copy(c.Root[:], root)
	return c, nil
}

// signer signs notes with an Ed25519 key under a name (the origin), as
// note's Ed25519 keys do (key type 0x01).
type signer struct {
	name string
	hash uint32
	priv ed25519.PrivateKey
}

func (s signer) Name() string                    { return s.name }
func (s signer) KeyHash() uint32                 { return s.hash }
func (s signer) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.priv, msg), nil }

// keyHash is a signed note's key id of an Ed25519 key under name: the
// first four bytes of SHA-256 over the name, a newline, the key type 0x01
// and the public key.
func keyHash(name string, pub ed25519.PublicKey) uint32 {
	sum := sha256.Sum256(append(append([]byte(name+"\n"), 0x01), pub...))
	return binary.BigEndian.Uint32(sum[:4])
}

// NewSigner signs checkpoints of origin with priv, the key name being the
// origin, as C2SP tlog-checkpoint recommends.
func NewSigner(origin string, priv ed25519.PrivateKey) note.Signer {
	return signer{name: origin, hash: keyHash(origin, priv.Public().(ed25519.PublicKey)), priv: priv}
}

// VerifierKey is the note verifier key of origin's checkpoints signed with
// the private half of pub ("<origin>+<key id>+<key>"), which anyone may
// verify them with, porthole or not.
func VerifierKey(origin string, pub ed25519.PublicKey) (string, error) {
	return note.NewEd25519VerifierKey(origin, pub)
}

// SignCheckpoint is c's signed note.
func SignCheckpoint(c Checkpoint, s note.Signer) ([]byte, error) {
	if c.Origin != s.Name() {
		return nil, fmt.Errorf("a checkpoint of %q signed by the key of %q", c.Origin, s.Name())
	}
	return note.Sign(&note.Note{Text: c.Text()}, s)
}

// OpenCheckpoint is the checkpoint a signed note holds, once a signature
// of one of vs verifies; the verifiers' name must be the checkpoint's
// origin.
func OpenCheckpoint(msg []byte, vs ...note.Verifier) (Checkpoint, error) {
	n, err := note.Open(msg, note.VerifierList(vs...))
	if err != nil {
		return Checkpoint{}, err
	}
	c, err := ParseText(n.Text)
	if err != nil {
		return Checkpoint{}, err
	}
	for _, s := range n.Sigs {
		if s.Name != c.Origin {
			return Checkpoint{}, fmt.Errorf("a checkpoint of %q verified with the key of %q", c.Origin, s.Name)
		}
	}
	return c, nil
}
