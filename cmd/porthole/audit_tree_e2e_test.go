package main

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	flog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/porthole-dev/porthole/audit"
)

const e2eOrigin = "porthole.test/audit/porthole-0"

// TestATrailKeptAsATreeProvesOneRecordToAnyoneWithThePublicKey: porthole
// serves with an origin, rotating and checkpointing often, and restarts.
// verify recomputes every signed tree note and holds the tree file to
// them; transparency-dev/formats opens the notes of the checkpoint file
// with the verifier key note-key prints; prove makes a call's proof by
// its request id and check-proof checks it with the public key alone,
// and refuses it edited, under another origin or with another key. A
// record edited, and the tail cut, are found; porthole refuses to start
// when the tree is gone.
func TestATrailKeptAsATreeProvesOneRecordToAnyoneWithThePublicKey(t *testing.T) {
	t.Parallel()
	priv, pub := keygen(t, t.TempDir(), "signing")
	_, otherPub := keygen(t, t.TempDir(), "other")
	file, token := newToken(t, "auditor-test")
	env, logPath, keyPath := auditEnv(t)
	checkpoints := filepath.Join(t.TempDir(), "checkpoints")
	env = append(env, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+file, "PORTHOLE_AUDIT_MAX_BYTES=4096",
		"PORTHOLE_AUDIT_CHECKPOINT_EVERY=5", "PORTHOLE_AUDIT_CHECKPOINT_FILE="+checkpoints, "PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME=true",
		"PORTHOLE_AUDIT_SIGNING_KEY_FILE="+priv, "PORTHOLE_AUDIT_ORIGIN="+e2eOrigin)
	var requestIDs []string
	var opsLogs strings.Builder
	for _, calls := range []int{6, 4} { // a restart between
		p, line := startPorthole(t, temporalEnv(t, env...), "serving MCP", "serve")
		for i := 0; i < calls; i++ {
			a := callRaw(line["endpoint"].(string), token, "describe_namespace", nil)
			if a.status != http.StatusOK || a.isError {
				t.Fatalf("call %d: %+v", i, a)
			}
			requestIDs = append(requestIDs, a.requestID)
		}
		p.stop(t)
		opsLogs.WriteString(p.logs.String())
	}
	files, _ := filepath.Glob(logPath + "*")
	run := func(args ...string) (string, error) {
		out, err := execPorthole(t, baseEnv(), args...).CombinedOutput()
		return string(out), err
	}
	verify := append([]string{"audit", "verify", "--key-file", keyPath, "--public-key", pub, "--checkpoints", checkpoints}, files...)
	if out, err := run(verify...); err != nil || !strings.Contains(out, "Merkle tree of origin "+e2eOrigin) || strings.Contains(out, "NOT recomputed") {
		t.Fatalf("verify: %v\n%s", err, out)
	}

	vkey, err := run("audit", "note-key", "--public-key", pub, "--origin", e2eOrigin)
	if err != nil {
		t.Fatalf("note-key: %v\n%s", err, vkey)
	}
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		t.Fatal(err)
	}
	// The notes of the checkpoint file, and of the operations log's lines
	// (which its redaction must leave whole).
	collected := filepath.Join(t.TempDir(), "collected")
	collectCheckpoints(t, opsLogs.String(), collected)
	for _, from := range []string{checkpoints, collected} {
		cps, _, err := audit.ReadCheckpoints(from)
		if err != nil || len(cps) < 3 {
			t.Fatalf("%d checkpoints in %s: %v", len(cps), from, err)
		}
		for _, c := range cps {
			if cp, _, _, err := flog.ParseCheckpoint([]byte(c.Note), e2eOrigin, v); err != nil || cp.Size != c.Seq {
				t.Fatalf("formats reads the note of seq %d in %s as %+v: %v", c.Seq, from, cp, err)
			}
		}
	}

	proofFile := filepath.Join(t.TempDir(), "record.proof")
	id := requestIDs[7] // a call after the restart
	if out, err := run(append([]string{"audit", "prove", "--request-id", id, "-o", proofFile}, files...)...); err != nil {
		t.Fatalf("prove: %v\n%s", err, out)
	}
	check := func(proof string, args ...string) (string, error) {
		return run(append(append([]string{"audit", "check-proof"}, args...), proof)...)
	}
	if out, err := check(proofFile, "--public-key", pub, "--origin", e2eOrigin); err != nil || !strings.Contains(out, "OK: record") || !strings.Contains(out, strconv.QuoteToASCII(id)) {
		t.Fatalf("check-proof: %v\n%s", err, out)
	}
	for what, args := range map[string][]string{
		"another origin": {"--public-key", pub, "--origin", "porthole.test/audit/porthole-1"},
		"another key":    {"--public-key", otherPub, "--origin", e2eOrigin},
	} {
		if out, err := check(proofFile, args...); err == nil || !strings.Contains(out, "REFUSED") {
			t.Fatalf("check-proof with %s: %v\n%s", what, err, out)
		}
	}
	b, _ := os.ReadFile(proofFile)
	head, rest, _ := strings.Cut(string(b), "\nindex ")
	lineB64 := strings.TrimPrefix(strings.SplitN(head, "\n", 2)[1], "extra ")
	line, _ := base64.StdEncoding.DecodeString(lineB64)
	edited := filepath.Join(t.TempDir(), "edited.proof")
	forged := base64.StdEncoding.EncodeToString(bytes.Replace(line, []byte("auditor-test"), []byte("someone-else"), 1))
	os.WriteFile(edited, []byte(strings.Replace(head, lineB64, forged, 1)+"\nindex "+rest), 0o600)
	if out, err := check(edited, "--public-key", pub, "--origin", e2eOrigin); err == nil || !strings.Contains(out, "REFUSED") {
		t.Fatalf("check-proof of an edited record: %v\n%s", err, out)
	}
	if out, err := run(append([]string{"audit", "prove", "--seq", "3"}, files...)...); err != nil || !strings.HasPrefix(out, "c2sp.org/tlog-proof@v1\n") {
		t.Fatalf("prove --seq: %v\n%s", err, out)
	}

	// The tail cut: the checkpoint file names what is missing; and the
	// log no longer meets its tree's notes, so porthole will not go on.
	lines := bytes.SplitAfter(mustRead(t, logPath), []byte("\n"))
	os.WriteFile(logPath, bytes.Join(lines[:len(lines)-4], nil), 0o600)
	if out, err := run(verify...); err == nil || !strings.Contains(out, "are missing") {
		t.Fatalf("verify of a cut tail: %v\n%s", err, out)
	}
	if out, err := execPorthole(t, temporalEnv(t, env...), "serve").CombinedOutput(); err == nil || !strings.Contains(string(out), "retire") {
		t.Fatalf("serve on a log cut below its checkpoint file: %v\n%s", err, out)
	}
	os.Remove(logPath + audit.TreeSuffix)
	os.WriteFile(checkpoints, nil, 0o600)
	if out, err := execPorthole(t, temporalEnv(t, env...), "serve").CombinedOutput(); err == nil || !strings.Contains(string(out), "has records but no tree") {
		t.Fatalf("serve without the tree: %v\n%s", err, out)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
