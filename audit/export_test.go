package audit

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"testing"
)

// What the external tests (package audit_test, which may import
// audit/review) reach of the writer's insides.

// rewriteChain edits every line with edit and re-links and re-seals the
// whole series with testKey: what an attacker holding the HMAC key can do.
func RewriteChain(t *testing.T, files []string, edit func([]byte) []byte) {
	t.Helper()
	l := newLog(Config{Key: testKey}, &memSink{}, false, 0, "")
	prev := ""
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var out []byte
		for _, line := range bytes.SplitAfter(b, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			i := bytes.LastIndex(line, []byte(macSuffix))
			body := append(edit(bytes.Clone(line[:i])), '}')
			if prev != "" {
				j := bytes.Index(body, []byte(`"prev":"`)) + len(`"prev":"`)
				body = append(append(bytes.Clone(body[:j]), prev...), body[j+64:]...)
			}
			sealed := seal(l.mac, body)
			prev = LineHash(sealed)
			out = append(out, sealed...)
		}
		os.WriteFile(f, out, 0o600)
	}
}

// SetLibraryDecode makes lines decode with encoding/json (true) or
// porthole's own decoder, until set back.
func SetLibraryDecode(b bool) { libraryDecode = b }

// SetWalked sets the hook told of each file a walk reads; nil for none.
func SetWalked(f func(path string)) { walked = f }

// LastTime and RotatedFiles are the pruner's readings of a file.
var (
	LastTime     = lastTime
	RotatedFiles = rotatedFiles
)

// MaxLineBytes is the longest line a walk reads.
const MaxLineBytes = maxLineBytes

// LastSeq is the sequence number of the last record of lines.
var LastSeq = lastSeq

// CloseWitness closes l's witness file under it: every later write to it
// fails.
func CloseWitness(l *Log) error { return l.witness.Close() }

// Parse is what p reads of one line.
func Parse(p *LineParser, line []byte) (Entry, error) { return p.parse(line) }

// Sign signs c with priv, as a checkpoint porthole wrote.
func Sign(c *Checkpoint, priv ed25519.PrivateKey) { c.sign(priv) }

// MacSuffix is what ends every line: the member holding its HMAC.
const MacSuffix = macSuffix

// SealBody seals a body an attacker made, with key.
func SealBody(key []byte, body string) []byte { return sealBody(key, body) }

// NewMemSink is a sink in memory that, once told to fail, still takes a
// write of at most pass bytes and puts the first tear bytes of a failing
// write in (a torn line).
func NewMemSink(pass, tear int) *memSink { return &memSink{pass: pass, tear: tear} }

// OpenMem opens a log on the sink s.
func OpenMem(t *testing.T, s *memSink, cfg Config) *Log { return openMem(t, s, cfg) }

// Fail makes s fail every write (nil: heal it).
func (s *memSink) Fail(err error) { s.fail(err) }

// SetTear sets how much of a failing write s still puts in.
func (s *memSink) SetTear(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tear = n
}

// Bytes is what s holds.
func (s *memSink) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.buf.Bytes())
}

// Lines are s's lines.
func (s *memSink) Lines() []string { return s.lines() }
