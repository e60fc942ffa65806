package witness

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit/merkle"
)

const testOrigin = "porthole.example.com/audit/porthole-0"

// testLog is a log's tree and key, as porthole's writer keeps them.
type testLog struct {
	t      *testing.T
	tree   *merkle.Tree
	signer note.Signer
	vkey   string
	tag    string // what its records say, so that two logs differ
}

func newTestLog(t *testing.T, priv ed25519.PrivateKey, tag string) *testLog {
	t.Helper()
	tree, err := merkle.OpenTree(filepath.Join(t.TempDir(), "tree"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Close() })
	vkey, err := merkle.VerifierKey(testOrigin, priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return &testLog{t: t, tree: tree, signer: merkle.NewSigner(testOrigin, priv), vkey: vkey, tag: tag}
}

// grow adds records up to size and returns the signed note of the tree.
func (l *testLog) grow(size int64) []byte {
	for l.tree.Size() < size {
		if err := l.tree.Append([]byte(fmt.Sprintf(`{"seq":%d,"tag":%q}`, l.tree.Size()+1, l.tag))); err != nil {
			l.t.Fatal(err)
		}
	}
	root, err := l.tree.Root(size)
	if err != nil {
		l.t.Fatal(err)
	}
	b, err := merkle.SignCheckpoint(merkle.Checkpoint{Origin: testOrigin, Size: size, Root: root}, l.signer)
	if err != nil {
		l.t.Fatal(err)
	}
	return b
}

// body is an add-checkpoint request from old to the note's size.
func (l *testLog) body(old, size int64, cp []byte) string {
	var proof tlog.TreeProof
	if old > 0 {
		var err error
		if proof, err = l.tree.ProveTree(size, old); err != nil {
			l.t.Fatal(err)
		}
	}
	return string(RequestBody(old, proof, cp))
}

func post(t *testing.T, url, body string) (int, string, string) {
	t.Helper()
	resp, err := http.Post(url+"/add-checkpoint", "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestAWitnessCosignsOnlyWhatExtendsWhatItCosigned: the witness cosigns a
// log's first checkpoint and then only checkpoints a consistency proof
// shows extend the last it cosigned; its cosignatures are cosignature/v1,
// which transparency-dev/formats verifies, with their time. A stale old
// size gets 409 with the latest size; a fork (a proof that fails, a
// second tree of the same size) and a shrink are refused, and the second
// tree, which the log signed beside the first, is kept; an unknown log is
// 404 and another key's signature 403; a second server on the same state
// is refused; the state and the refusals survive a new server on it. A
// line the request adds under the witness's own name is not kept.
func TestAWitnessCosignsOnlyWhatExtendsWhatItCosigned(t *testing.T) {
	t.Parallel()
	_, logKey, _ := ed25519.GenerateKey(rand.Reader)
	log, fork := newTestLog(t, logKey, "a"), newTestLog(t, logKey, "b")
	skey, vkey, err := GenerateKey("witness.example.com/w1")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	cosigner, err := NewCosigner(skey, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var s *Server
	start := func() *httptest.Server {
		var err error
		if s, err = NewServer(cosigner, []string{log.vkey}, dir); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		return srv
	}
	srv := start()
	if _, err := NewServer(cosigner, []string{log.vkey}, dir); err == nil {
		t.Fatal("a second witness took the first's state")
	}

	theirs, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	cosigned := func(cp []byte, line string) {
		t.Helper()
		for _, v := range []note.Verifier{theirs, ours} {
			n, err := note.Open(append(cp, line...), note.VerifierList(v))
			if err != nil {
				t.Fatalf("the cosignature %q: %v", line, err)
			}
			if when, err := fnote.CoSigV1Timestamp(n.Sigs[0]); err != nil || !when.Equal(at) {
				t.Fatalf("the cosignature's time %v: %v", when, err)
			}
			if _, cs, err := Cosignatures(append(cp, line...), []*Verifier{ours}); err != nil || len(cs) != 1 || !cs[0].Time.Equal(at) {
				t.Fatalf("Cosignatures = %+v, %v", cs, err)
			}
		}
	}
	cp5 := log.grow(5)
	forged := "— witness.example.com/w1 " + base64.StdEncoding.EncodeToString(append(binary.BigEndian.AppendUint32(nil, cosigner.KeyHash()), make([]byte, 72)...)) + "\n"
	status, _, line := post(t, srv.URL, log.body(0, 5, cp5)+forged)
	if status != http.StatusOK {
		t.Fatalf("the first checkpoint: %d %s", status, line)
	}
	cosigned(cp5, line)
	cp10 := log.grow(10)
	if status, _, line = post(t, srv.URL, log.body(5, 10, cp10)); status != http.StatusOK {
		t.Fatalf("a checkpoint that extends it: %d %s", status, line)
	}
	cosigned(cp10, line)

	if status, ctype, body := post(t, srv.URL, log.body(5, 10, cp10)); status != http.StatusConflict || ctype != "text/x.tlog.size" || body != "10\n" {
		t.Fatalf("a stale old size: %d %s %q", status, ctype, body)
	}
	fork12 := fork.grow(12)
	fork.grow(10)
	if status, _, body := post(t, srv.URL, fork.body(10, 12, fork12)); status != http.StatusUnprocessableEntity {
		t.Fatalf("a fork: %d %s", status, body)
	}
	if status, _, body := post(t, srv.URL, fork.body(10, 10, fork.grow(10))); status != http.StatusConflict {
		t.Fatalf("a second tree of the same size: %d %s", status, body)
	}
	if status, _, body := post(t, srv.URL, "old 10\n\n"+string(log.grow(7))); status != http.StatusBadRequest {
		t.Fatalf("a shrink: %d %s", status, body)
	}
	if status, _, _ := post(t, srv.URL, "old 0\n\n"+string(newTestLogOther(t))); status != http.StatusNotFound {
		t.Fatalf("an unknown log: %d", status)
	}
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	if status, _, _ := post(t, srv.URL, "old 10\n\n"+string(newTestLog(t, stranger, "a").grow(12))); status != http.StatusForbidden {
		t.Fatalf("another key's checkpoint: %d", status)
	}

	// A new server on the same state: the latest is still 10, and the
	// fork still refused; the refusals were kept.
	srv.Close()
	s.Close()
	srv = start()
	if status, _, body := post(t, srv.URL, fork.body(10, 12, fork12)); status != http.StatusUnprocessableEntity {
		t.Fatalf("a fork after a restart: %d %s", status, body)
	}
	refused, err := os.ReadFile(store{dir}.path(testOrigin, ".refused"))
	if err != nil || strings.Count(string(refused), "\n") != 1 {
		t.Fatalf("the refusals kept: %v\n%s", err, refused)
	}
	resp, err := http.Get(srv.URL + "/checkpoint?origin=" + testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	n, err := note.Open(b, note.VerifierList(theirs))
	if err != nil || !strings.HasPrefix(n.Text, testOrigin+"\n10\n") || strings.Count(string(b), "\n— ") != 2 {
		t.Fatalf("the latest cosigned: %v\n%s", err, b)
	}
}

// newTestLogOther is a checkpoint of a log this witness does not know.
func newTestLogOther(t *testing.T) []byte {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	b, err := merkle.SignCheckpoint(merkle.Checkpoint{Origin: "elsewhere.example/log", Size: 1}, merkle.NewSigner("elsewhere.example/log", priv))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzARequestParsesOrIsRefused: an add-checkpoint body is read as an old
// size, at most 63 hashes and a checkpoint, or refused; never a panic.
func FuzzARequestParsesOrIsRefused(f *testing.F) {
	f.Add([]byte("old 3\n" + strings.Repeat("A", 43) + "=\n\n" + testOrigin + "\n4\nAAAA\n\n— x AAAA\n"))
	f.Add([]byte("old 0\n\n"))
	f.Add([]byte("old 01\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseRequest(body)
		if err != nil {
			return
		}
		if r.old < 0 || len(r.proof) > 63 || !bytes.HasPrefix(body, []byte("old "+strconv.FormatInt(r.old, 10)+"\n")) {
			t.Fatalf("%q read as %+v", body, r)
		}
		// The server acts on nothing else: an unknown origin is refused.
		s := &Server{logs: map[string]note.Verifier{}}
		if _, p := s.add(r); p == nil {
			t.Fatal("a checkpoint of no configured log was cosigned")
		}
	})
}
