package witness

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// TestASenderBringsEachWitnessToTheLatestCheckpoint: a sender gives two
// witnesses and one that is down each checkpoint of a log's tree; the
// two cosign every one, the one that had cosigned an earlier checkpoint
// through another sender after a 409 that names its size; each
// cosignature is kept, and transparency-dev/formats verifies it; the one
// down is behind, since the first checkpoint it missed, with its error.
func TestASenderBringsEachWitnessToTheLatestCheckpoint(t *testing.T) {
	t.Parallel()
	_, logKey, _ := ed25519.GenerateKey(rand.Reader)
	log := newTestLog(t, logKey, "a")
	var ws []Witness
	var vkeys []string
	var first *httptest.Server
	for _, name := range []string{"witness.example/w1", "witness.example/w2"} {
		skey, vkey, err := GenerateKey(name)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := NewCosigner(skey, nil)
		s, err := NewServer(c, []string{log.vkey}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		if first == nil {
			first = srv
		}
		v, _ := NewVerifier(vkey)
		ws, vkeys = append(ws, Witness{URL: srv.URL, Verifier: v}), append(vkeys, vkey)
	}
	_, vdown, _ := GenerateKey("witness.example/down")
	down, _ := NewVerifier(vdown)
	ws = append(ws, Witness{URL: "http://127.0.0.1:1", Verifier: down})

	// The first witness has cosigned the tree of 3 already.
	cp3 := log.grow(3)
	if status, _, body := post(t, first.URL, log.body(0, 3, cp3)); status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	cosigs := filepath.Join(t.TempDir(), "audit.log.cosignatures")
	s, err := NewSender(ws, log.tree.Path(), cosigs, &http.Client{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sent := time.Now()
	for _, size := range []int64{5, 9} {
		s.Send(log.grow(size), size, sent)
		time.Sleep(100 * time.Millisecond)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := s.Statuses()
		if st[0].Size == 9 && st[1].Size == 9 && st[2].Err != "" {
			if st[0].Behind != 0 || st[2].Behind != 9 || !st[2].BehindSince.Equal(sent) {
				t.Fatalf("statuses %+v", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("statuses %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	f, err := os.Open(cosigs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var c Cosigned
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		v, err := fnote.NewVerifierForCosignatureV1(vkeys[map[string]int{"witness.example/w1": 0, "witness.example/w2": 1}[c.Witness]])
		if err != nil {
			t.Fatal(err)
		}
		lv, _ := note.NewVerifier(log.vkey)
		if n, err := note.Open([]byte(c.Checkpoint), note.VerifierList(v, lv)); err != nil || len(n.Sigs) != 2 {
			t.Fatalf("a kept cosignature of %s: %v", c.Witness, err)
		}
	}
	if lines < 2 {
		t.Fatalf("%d cosignatures kept", lines)
	}
}

// TestASenderCountsNoAnswerButACosignatureOfTheCheckpoint: a witness that
// answers a signature over other text (its answer beginning with an empty
// line, which joined to the checkpoint would move where its text ends)
// is a failure, not a cosignature, and nothing is kept of it.
func TestASenderCountsNoAnswerButACosignatureOfTheCheckpoint(t *testing.T) {
	t.Parallel()
	_, logKey, _ := ed25519.GenerateKey(rand.Reader)
	log := newTestLog(t, logKey, "a")
	skey, vkey, _ := GenerateKey("witness.example/liar")
	c, _ := NewCosigner(skey, nil)
	liar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		signed, _ := note.Sign(&note.Note{Text: "other text\n"}, c)
		_, sig, _ := strings.Cut(string(signed), "\n\n")
		w.Write([]byte("\n" + sig))
	}))
	defer liar.Close()
	v, _ := NewVerifier(vkey)
	cosigs := filepath.Join(t.TempDir(), "cosignatures")
	s, err := NewSender([]Witness{{URL: liar.URL, Verifier: v}}, log.tree.Path(), cosigs, liar.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Send(log.grow(4), 4, time.Now())
	deadline := time.Now().Add(3 * time.Second)
	for s.Statuses()[0].Err == "" {
		if time.Now().After(deadline) {
			t.Fatal("no failure said")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := s.Statuses()[0]; st.Size != 0 || st.Behind != 4 {
		t.Fatalf("a lie counted: %+v", st)
	}
	if b, _ := os.ReadFile(cosigs); len(b) != 0 {
		t.Fatalf("kept: %s", b)
	}
}
