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

// lineHash is what the next record's prev names: the SHA-256 of a whole line
// without its newline.
func lineHash(line []byte) string {
	sum := sha256.Sum256(bytes.TrimSuffix(line, []byte("\n")))
	return hex.EncodeToString(sum[:])
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
	Args []struct {
		Name      string `json:"name"`
		Value     string `json:"value"`
		Truncated bool   `json:"truncated"`
	} `json:"args"`
	ArgsOmitted       int       `json:"argsOmitted"`
	ArgsOmittedSHA256 string    `json:"argsOmittedSha256"`
	Outcome           Outcome   `json:"outcome"`
	Status            int       `json:"status"`
	Reason            string    `json:"reason"`
	DurationMs        float64   `json:"durationMs"`
	ResultBytes       int       `json:"resultBytes"`
	Redactions        int       `json:"redactions"`
	Cached            bool      `json:"cached"`
	Count             int       `json:"count"`
	First             time.Time `json:"first"`
	Last              time.Time `json:"last"`
	Groups            []struct {
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
	MAC             string      `json:"mac"`
}

var (
	errNotARecord = errors.New("not an audit record")
	errBadMAC     = errors.New("the HMAC does not match")
	errNoKey      = errors.New("the record names an HMAC key the verifier was not given")
)

// parseLine reads one line (without its newline). With HMAC keys in the
// ring it checks the HMAC, with the key the record names (a record written
// before records named their key: with each key until one matches); without
// any, it checks only the shape.
func parseLine(line []byte, ring *Keyring) (Entry, error) {
	if !ring.hasHMAC() {
		return parseLineKey(line, nil)
	}
	e, err := parseLineKey(line, nil)
	if err != nil {
		return e, err
	}
	// The line is decoded once; each key is held to the same bytes (it
	// was decoded again per key, most of what verifying a trail cost).
	if e.KeyID != "" {
		key, ok := ring.hmac[e.KeyID]
		if !ok {
			return e, fmt.Errorf("%w (key id %q)", errNoKey, e.KeyID)
		}
		return e, checkMAC(line, e.MAC, key)
	}
	for _, key := range ring.hmac {
		if err = checkMAC(line, e.MAC, key); err == nil {
			return e, nil
		}
	}
	return e, err
}

// checkMAC holds a record line's MAC (mac, as the line gives it) to key:
// the HMAC of the line without its mac member.
func checkMAC(line []byte, mac string, key []byte) error {
	i := bytes.LastIndex(line, []byte(macSuffix))
	body := append(bytes.Clone(line[:i]), '}')
	m := hmac.New(sha256.New, key)
	m.Write(body)
	want, err := hex.DecodeString(mac)
	if err != nil || !hmac.Equal(m.Sum(nil), want) {
		return errBadMAC
	}
	return nil
}

// parseLineKey is parseLine with one key, or none.
func parseLineKey(line, key []byte) (Entry, error) {
	var e Entry
	i := bytes.LastIndex(line, []byte(macSuffix))
	if i < 0 || !bytes.HasSuffix(line, []byte(`"}`)) || len(line)-i != len(macSuffix)+64+2 {
		return e, errNotARecord
	}
	if err := decodeEntry(line, &e); err != nil {
		return e, errNotARecord
	}
	if key != nil {
		return e, checkMAC(line, e.MAC, key)
	}
	return e, nil
}
