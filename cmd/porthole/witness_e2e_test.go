package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit/merkle"
	"github.com/porthole-dev/porthole/audit/witness"
)

// witnessedTree is a log's Merkle tree and key, made in the test, whose
// checkpoints a witness is sent.
type witnessedTree struct {
	t    *testing.T
	tree *merkle.Tree
	priv ed25519.PrivateKey
	tag  string
}

func (w *witnessedTree) request(old, size int64) string {
	w.t.Helper()
	for w.tree.Size() < size {
		if err := w.tree.Append([]byte(fmt.Sprintf(`{"seq":%d,"tag":%q}`, w.tree.Size()+1, w.tag))); err != nil {
			w.t.Fatal(err)
		}
	}
	root, _ := w.tree.Root(size)
	cp, err := merkle.SignCheckpoint(merkle.Checkpoint{Origin: e2eOrigin, Size: size, Root: root}, merkle.NewSigner(e2eOrigin, w.priv))
	if err != nil {
		w.t.Fatal(err)
	}
	var proof tlog.TreeProof
	if old > 0 {
		if proof, err = w.tree.ProveTree(size, old); err != nil {
			w.t.Fatal(err)
		}
	}
	return string(witness.RequestBody(old, proof, cp))
}

// TestAWitnessKilledRightAfterACosignatureStillRefusesAFork: porthole
// witness cosigns a log's checkpoints, is killed with SIGKILL right after
// a cosignature, and, started again on its state, refuses a fork of what
// it cosigned last and cosigns what extends it.
func TestAWitnessKilledRightAfterACosignatureStillRefusesAFork(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile, vkeyFile := filepath.Join(dir, "witness.key"), filepath.Join(dir, "witness.vkey")
	if out, err := execPorthole(t, baseEnv(), "witness", "keygen", "--name", "witness.test/w1", "--private-key-file", keyFile, "--verifier-key-file", vkeyFile).CombinedOutput(); err != nil {
		t.Fatalf("witness keygen: %v\n%s", err, out)
	}
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	logKey, err := merkle.VerifierKey(e2eOrigin, pub)
	if err != nil {
		t.Fatal(err)
	}
	trees := map[string]*witnessedTree{}
	for _, tag := range []string{"a", "b"} {
		tree, err := merkle.OpenTree(filepath.Join(t.TempDir(), "tree"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tree.Close() })
		trees[tag] = &witnessedTree{t: t, tree: tree, priv: priv, tag: tag}
	}
	state := filepath.Join(dir, "state")
	serve := func() (*process, string) {
		p, line := startPorthole(t, baseEnv(), "witness serving", "witness", "serve", "--key-file", keyFile, "--log-key", logKey, "--state-dir", state, "--listen", "127.0.0.1:0")
		return p, "http://" + line["addr"].(string)
	}
	post := func(url, body string) (int, string) {
		resp, err := http.Post(url+"/add-checkpoint", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	p, url := serve()
	for _, step := range [][2]int64{{0, 4}, {4, 9}} {
		if status, body := post(url, trees["a"].request(step[0], step[1])); status != http.StatusOK || !strings.HasPrefix(body, "— witness.test/w1 ") {
			t.Fatalf("old %d, size %d: %d %s", step[0], step[1], status, body)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done

	_, url = serve()
	if status, body := post(url, trees["b"].request(9, 12)); status != http.StatusUnprocessableEntity {
		t.Fatalf("a fork after the SIGKILL: %d %s", status, body)
	}
	if status, body := post(url, trees["b"].request(0, 9)); status != http.StatusConflict || body != "9\n" {
		t.Fatalf("a fork from size 0 after the SIGKILL: %d %q", status, body)
	}
	if status, body := post(url, trees["a"].request(9, 15)); status != http.StatusOK {
		t.Fatalf("what extends the last cosigned: %d %s", status, body)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 2 { // the latest, and the refusals
		t.Fatalf("the state holds %d files", len(entries))
	}
}
