package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/audit"
)

// A scheduled check reads one exit status: 0 when every series is proven
// complete to its last record by a signed checkpoint, 1 when a chain is
// broken, 3 when it holds but nothing proves its end was not cut. Without
// --require-complete a series that holds exits 0 whatever is proven.
func TestVerifyRequireCompleteFailsUnlessEverySeriesIsProven(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	privPEM, pubPEM, err := audit.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := readSigningKeyPEM(t, dir, privPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(dir, "signing.pub")
	keyFile := filepath.Join(dir, "audit.key")
	key := []byte("require-complete-test-audit-key-0123456789abcdef")
	os.WriteFile(pub, pubPEM, 0o600)
	os.WriteFile(keyFile, key, 0o600)
	logPath, checkpointFile := filepath.Join(dir, "audit.log"), filepath.Join(t.TempDir(), "checkpoints")
	l, err := audit.Open(audit.Config{Path: logPath, Key: key, Signer: priv, CheckpointPath: checkpointFile, CheckpointEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		rec := audit.Record{Kind: audit.KindCall, RequestID: "r1", Principal: "alice", ClientAddr: "127.0.0.1:1", Transport: "http", Method: "tools/call", Tool: "describe_namespace"}
		if err := l.Write(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	verify := func(cmd string, args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"audit", cmd, "--key-file", keyFile}, append(args, logPath)...), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	proven := []string{"--public-key", pub, "--checkpoints", checkpointFile}
	for _, cmd := range []string{"verify", "report"} {
		if code, out := verify(cmd, append([]string{"--require-complete"}, proven...)...); code != 0 {
			t.Errorf("%s --require-complete of a trail proven to its end: exit %d\n%s", cmd, code, out)
		}
		if code, out := verify(cmd, "--require-complete"); code != 3 || !strings.Contains(out, "NOT COMPLETE") {
			t.Errorf("%s --require-complete without checkpoints: exit %d; want 3\n%s", cmd, code, out)
		}
		if code, out := verify(cmd); code != 0 {
			t.Errorf("%s without --require-complete: exit %d; want 0\n%s", cmd, code, out)
		}
	}
	// A record past the last checkpoint is not proven.
	b, _ := os.ReadFile(checkpointFile)
	lines := strings.SplitAfter(strings.TrimSpace(string(b)), "\n")
	os.WriteFile(checkpointFile, []byte(strings.Join(lines[:len(lines)-1], "")), 0o600)
	if code, out := verify("verify", append([]string{"--require-complete"}, proven...)...); code != 3 {
		t.Errorf("verify --require-complete with the last checkpoint gone: exit %d; want 3\n%s", code, out)
	}
	// A broken chain is 1 still.
	raw, _ := os.ReadFile(logPath)
	os.WriteFile(logPath, bytes.Replace(raw, []byte(`alice`), []byte(`alicf`), 1), 0o600)
	if code, out := verify("verify", append([]string{"--require-complete"}, proven...)...); code != 1 {
		t.Errorf("verify --require-complete of a broken chain: exit %d; want 1\n%s", code, out)
	}
	if code, out := verify("report", append([]string{"--require-complete", "--unverified"}, proven...)...); code != 1 {
		t.Errorf("report --unverified --require-complete of a broken chain: exit %d; want 1\n%s", code, out)
	}
}

// readSigningKeyPEM writes a private key PEM and reads it as serve does.
func readSigningKeyPEM(t *testing.T, dir string, pemBytes []byte) ([]byte, error) {
	t.Helper()
	path := filepath.Join(dir, "signing.key")
	if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
		return nil, err
	}
	priv, _, err := readSigningKey(path)
	return priv, err
}
