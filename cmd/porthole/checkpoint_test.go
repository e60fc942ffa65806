package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// keygen writes a checkpoint signing key pair with the binary.
func keygen(t *testing.T, dir, name string) (priv, pub string) {
	t.Helper()
	priv, pub = filepath.Join(dir, name), filepath.Join(dir, name+".pub")
	if out, err := execPorthole(t, baseEnv(), "audit", "keygen", "--private-key-file", priv, "--public-key-file", pub).CombinedOutput(); err != nil {
		t.Fatalf("audit keygen: %v\n%s", err, out)
	}
	if st, err := os.Stat(priv); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("private key file: %v, %v; want mode 0600", st, err)
	}
	return priv, pub
}

// collectCheckpoints turns the operations log's "audit checkpoint" lines
// into a checkpoints file, as docs/audit.md tells a reviewer to (there with
// jq -c 'select(.msg == "audit checkpoint") | .checkpoint').
func collectCheckpoints(t *testing.T, opsLog, out string) int {
	t.Helper()
	var b strings.Builder
	n := 0
	sc := bufio.NewScanner(strings.NewReader(opsLog))
	for sc.Scan() {
		var line struct {
			Msg        string          `json:"msg"`
			Checkpoint json.RawMessage `json:"checkpoint"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "audit checkpoint" {
			b.Write(line.Checkpoint)
			b.WriteByte('\n')
			n++
		}
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestACheckpointedTrailSurvivesRotationRestartsAndKeyRotation: porthole
// serves with a small rotation size and a checkpoint every few records,
// restarts, then restarts with both its keys rotated; a reviewer holding
// only the public keys, and the checkpoints collected from the operations
// log, proves the whole series complete to its last checkpoint. A head cut
// and a lost newest file are then found.
func TestACheckpointedTrailSurvivesRotationRestartsAndKeyRotation(t *testing.T) {
	t.Parallel()
	keys := t.TempDir()
	priv1, pub1 := keygen(t, keys, "signing-1")
	priv2, pub2 := keygen(t, keys, "signing-2")
	file, token := newToken(t, "auditor-test")
	env, logPath, keyPath := auditEnv(t)
	checkpointFile := filepath.Join(t.TempDir(), "checkpoints")
	env = append(env, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+file, "PORTHOLE_AUDIT_MAX_BYTES=4096",
		"PORTHOLE_AUDIT_CHECKPOINT_EVERY=5", "PORTHOLE_AUDIT_CHECKPOINT_FILE="+checkpointFile)

	// The checkpoint file beside the log is refused unless that is allowed.
	refused := execPorthole(t, temporalEnv(t, append(env, "PORTHOLE_AUDIT_SIGNING_KEY_FILE="+priv1)...), "serve")
	if out, err := refused.CombinedOutput(); err == nil || !strings.Contains(string(out), "on the audit log's own volume") {
		t.Fatalf("serve with the checkpoint file on the log's volume: %v\n%s", err, out)
	}
	env = append(env, "PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME=true")

	var opsLogs strings.Builder
	run := func(signingKey string, calls int) {
		p, line := startPorthole(t, temporalEnv(t, append(env, "PORTHOLE_AUDIT_SIGNING_KEY_FILE="+signingKey)...), "serving MCP", "serve")
		for i := 0; i < calls; i++ {
			if a := callRaw(line["endpoint"].(string), token, "describe_namespace", nil); a.status != http.StatusOK || a.isError {
				t.Fatalf("call %d: %+v", i, a)
			}
		}
		p.stop(t)
		opsLogs.WriteString(p.logs.String())
	}
	run(priv1, 6)
	run(priv1, 4) // a restart
	if err := os.WriteFile(keyPath, []byte("a-new-audit-key-after-rotation-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	oldKey := filepath.Join(keys, "audit.key.old")
	os.WriteFile(oldKey, []byte("0123456789abcdef0123456789abcdef0123456789abcdef\n"), 0o600)
	run(priv2, 6) // both keys rotated

	files, _ := filepath.Glob(logPath + "*")
	if len(files) < 3 {
		t.Fatalf("the trail rotated into %d files, want several", len(files))
	}
	collected := filepath.Join(t.TempDir(), "collected")
	if n := collectCheckpoints(t, opsLogs.String(), collected); n < 4 {
		t.Fatalf("%d checkpoints in the operations log", n)
	}
	verify := func(args ...string) (string, error) {
		out, err := execPorthole(t, baseEnv(), append(append([]string{"audit", "verify", "--public-key", pub1, "--public-key", pub2}, args...), files...)...).CombinedOutput()
		return string(out), err
	}
	for _, checkpoints := range []string{checkpointFile, collected} {
		out, err := verify("--checkpoints", checkpoints)
		if err != nil || !strings.Contains(out, "OK:") || !strings.Contains(out, "proven by") || strings.Contains(out, "NOT proven") {
			t.Fatalf("verify with the public keys and %s: %v\n%s", checkpoints, err, out)
		}
	}
	if out, err := verify("--checkpoints", checkpointFile, "--key-file", oldKey, "--key-file", keyPath); err != nil || !strings.Contains(out, "HMACs checked") {
		t.Fatalf("verify with both HMAC keys: %v\n%s", err, out)
	}

	// The two newest files lost (the newest may hold only what followed
	// the last checkpoint): the checkpoint file says records are missing.
	var rotated []string
	for _, f := range files {
		if f != logPath {
			rotated = append(rotated, f)
		}
	}
	sort.Strings(rotated) // named by the time of rotation
	out, err := execPorthole(t, baseEnv(), append([]string{"audit", "verify", "--public-key", pub1, "--public-key", pub2, "--checkpoints", checkpointFile}, rotated[:len(rotated)-1]...)...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "are missing: the checkpoint") {
		t.Fatalf("verify without the newest file: %v\n%s", err, out)
	}

	// The archive pruned of all but its newest file, by the rotated keys:
	// what remains verifies from the signed pruned record, with the public
	// keys alone.
	prune := append([]string{"audit", "prune", "--before", "0s", "--key-file", keyPath, "--key-file", oldKey,
		"--signing-key-file", priv2, "--public-key", pub1}, files...)
	if out, err := execPorthole(t, baseEnv(), prune...).CombinedOutput(); err != nil || !strings.Contains(string(out), "removed") {
		t.Fatalf("audit prune: %v\n%s", err, out)
	}
	files, _ = filepath.Glob(logPath + "*")
	out2, err := verify("--checkpoints", checkpointFile)
	if err != nil || !strings.Contains(out2, "OK:") || !strings.Contains(out2, "were pruned") || len(files) != 1 {
		t.Fatalf("verify after pruning to %v: %v\n%s", files, err, out2)
	}
}
