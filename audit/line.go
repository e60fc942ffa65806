package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"time"
)

// macSuffix begins the last field of every line; the HMAC covers every byte
// of the line before it, with "}" in place of this suffix.
const macSuffix = `,"mac":"`

// seal returns the line of an encoded record body "{...}": the body with
// the HMAC field appended, under mac (an HMAC-SHA256, reset here).
func seal(mac hash.Hash, body []byte) []byte {
	mac.Reset()
	mac.Write(body)
	var sum [sha256.Size]byte
	line := make([]byte, 0, len(body)+len(macSuffix)+2*len(sum)+3)
	line = append(line, body[:len(body)-1]...)
	line = append(line, macSuffix...)
	line = hex.AppendEncode(line, mac.Sum(sum[:0]))
	line = append(line, '"', '}', '\n')
	return line
}

// LineHash is what the next record's prev names: the SHA-256 of a whole line
// without its newline.
func LineHash(line []byte) string {
	sum := lineDigest(line)
	return hex.EncodeToString(sum[:])
}

// lineDigest is the SHA-256 of a line without its newline: LineHash, and
// the line's leaf in the log's Merkle tree (merkle.DigestLeafHash).
func lineDigest(line []byte) [32]byte { return sha256.Sum256(bytes.TrimSuffix(line, []byte("\n"))) }

// EntryArg is an argument as a record holds it: name and value quoted.
type EntryArg = struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Truncated bool   `json:"truncated"`
}

// Entry is a record as read back from a log.
type Entry struct {
	Time       time.Time `json:"time"`
	Seq        uint64    `json:"seq"`
	Prev       string    `json:"prev"`
	V          int       `json:"v"`   // 0 for records written before versions (1)
	KeyID      string    `json:"kid"` // the HMAC key's KeyID; "" before version 2
	Kind       Kind      `json:"kind"`
	RequestID  string    `json:"requestId"`
	Principal  string    `json:"principal"`
	ClientAddr string    `json:"clientAddr"`
	ClientCert string    `json:"clientCert"` // version 5; "" without a client certificate
	Transport  string    `json:"transport"`
	UserAgent  string    `json:"userAgent"`
	Method     string    `json:"method"`
	Tool       string    `json:"tool"`
	Upstream   string    `json:"upstream"`
	TraceID    string    `json:"traceId"` // version 3; "" without tracing
	OAuth      *struct {
		Issuer   string `json:"issuer"`
		Subject  string `json:"subject"`
		ClientID string `json:"clientId"`
		TokenID  string `json:"tokenId"`
	} `json:"oauth"`
	Args              []EntryArg `json:"args"`
	ArgsOmitted       int        `json:"argsOmitted"`
	ArgsOmittedSHA256 string     `json:"argsOmittedSha256"`
	Outcome           Outcome    `json:"outcome"`
	Status            int        `json:"status"`
	Reason            string     `json:"reason"`
	DurationMs        float64    `json:"durationMs"`
	ResultBytes       int        `json:"resultBytes"`
	Redactions        int        `json:"redactions"`
	Cached            bool       `json:"cached"`
	Profile           string     `json:"profile"` // version 4; "" for the default profile
	// Opened are, on a result, the values the call's pseudonyms stood for
	// (version 4).
	Opened []EntryArg `json:"opened"`
	Count  int        `json:"count"`
	First  time.Time  `json:"first"`
	Last   time.Time  `json:"last"`
	Groups []struct {
		Count   int     `json:"count"`
		Outcome Outcome `json:"outcome"`
		Status  int     `json:"status"`
		Reason  string  `json:"reason"`
	} `json:"groups"`
	PreviousFile    string      `json:"previousFile"`
	PreviousLastSeq uint64      `json:"previousLastSeq"`
	Chain           string      `json:"chain"`
	MissingFrom     uint64      `json:"missingFrom"`
	MissingTo       uint64      `json:"missingTo"`
	Checkpoint      *Checkpoint `json:"checkpoint"`
	Pruned          *Checkpoint `json:"pruned"`
	Tree            *TreeEdge   `json:"tree"` // version 6
	MAC             string      `json:"mac"`
}

var (
	errNotARecord = errors.New("not an audit record")
	ErrBadMAC     = errors.New("the HMAC does not match")
	ErrNoKey      = errors.New("the record names an HMAC key the verifier was not given")
)

// A LineParser reads a walk's lines: with HMAC keys in the ring it checks
// each line's HMAC, with the key the record names (a record written
// before records named their key: with each key until one matches);
// without any, it checks only the shape. It keeps an HMAC state per key
// from line to line (making one for every line cost verifying a share of
// its time, docs/performance.md), and so is one walk's own.
type LineParser struct {
	ring *Keyring
	macs map[string]hash.Hash // by key id
	// Leaves makes Check hash each line as a Merkle tree's leaf too, on
	// the walk's other goroutines.
	Leaves bool
}

func NewLineParser(ring *Keyring) *LineParser {
	return &LineParser{ring: ring, macs: map[string]hash.Hash{}}
}

// parse reads one line (without its newline).
func (p *LineParser) parse(line []byte) (Entry, error) {
	e, err := ParseLineKey(line, nil)
	if err != nil || !p.ring.HasHMAC() {
		return e, err
	}
	// The line is decoded once; each key is held to the same bytes (it
	// was decoded again per key, most of what verifying a trail cost).
	if e.KeyID != "" {
		if _, ok := p.ring.hmac[e.KeyID]; !ok {
			return e, fmt.Errorf("%w (key id %q)", ErrNoKey, e.KeyID)
		}
		return e, checkMAC(p.mac(e.KeyID), line, e.MAC)
	}
	for id := range p.ring.hmac {
		if err = checkMAC(p.mac(id), line, e.MAC); err == nil {
			return e, nil
		}
	}
	return e, err
}

// mac is the HMAC state of the ring's key id.
func (p *LineParser) mac(id string) hash.Hash {
	m := p.macs[id]
	if m == nil {
		m = hmac.New(sha256.New, p.ring.hmac[id])
		p.macs[id] = m
	}
	return m
}

// checkMAC holds a record line's MAC (mac, as the line gives it) to the
// HMAC m (reset here) of the line without its mac member.
func checkMAC(m hash.Hash, line []byte, mac string) error {
	i := bytes.LastIndex(line, []byte(macSuffix))
	m.Reset()
	m.Write(line[:i])
	m.Write([]byte{'}'})
	var sum [sha256.Size]byte
	want, err := hex.DecodeString(mac)
	if err != nil || !hmac.Equal(m.Sum(sum[:0]), want) {
		return ErrBadMAC
	}
	return nil
}

// ParseLineKey is parseLine with one key, or none.
func ParseLineKey(line, key []byte) (Entry, error) {
	var e Entry
	i := bytes.LastIndex(line, []byte(macSuffix))
	if i < 0 || !bytes.HasSuffix(line, []byte(`"}`)) || len(line)-i != len(macSuffix)+64+2 {
		return e, errNotARecord
	}
	if err := decodeEntry(line, &e); err != nil {
		return e, errNotARecord
	}
	if key != nil {
		return e, checkMAC(hmac.New(sha256.New, key), line, e.MAC)
	}
	return e, nil
}
