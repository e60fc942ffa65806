package review

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/audittest"
)

// TestAnUpgradedLogKeepsItsChainAcrossRestarts: a log written by version 1
// was given a chain at its first start after the upgrade, and a new one at
// every start after (only the file's first line was read for it).
func TestAnUpgradedLogKeepsItsChainAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, _ := filepath.Glob("testdata/v1/audit.log*")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600)
	}
	key, _ := os.ReadFile("testdata/v1/audit.key")
	for i := 0; i < 3; i++ {
		l, err := audit.Open(audit.Config{Path: filepath.Join(dir, "audit.log"), Key: key})
		if err != nil {
			t.Fatal(err)
		}
		l.Write(context.Background(), audittest.CallRecord("alice", "list_workflows"))
		l.Close()
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "audit.log*"))
	if v, _ := VerifyWith(paths, VerifyOptions{Keys: audit.NewKeyring([][]byte{key}, nil)}); !v.OK() {
		t.Fatalf("an upgraded log after three starts: %+v", v)
	}
}

// TestALogWrittenBySchemaVersion1StillVerifies: audit/review/testdata/v1 is a
// rotated series (genesis, calls, results, a denial, a denials summary, a
// tool change, rotations, a restart) written by porthole before records
// carried a schema version. A reviewer holding such a trail must be able to
// verify and report on it with its key for as long as porthole exists: do
// not regenerate these files.
func TestALogWrittenBySchemaVersion1StillVerifies(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/v1/audit.log*")
	if err != nil || len(files) != 5 {
		t.Fatalf("testdata/v1 holds %d files (%v)", len(files), err)
	}
	key, err := os.ReadFile("testdata/v1/audit.key")
	if err != nil {
		t.Fatal(err)
	}
	v, err := Verify(files, key)
	if err != nil || !v.OK() {
		t.Fatalf("Verify = %+v, %v", v, err)
	}
	if v.Records != 29 || v.FirstSeq != 1 || v.LastSeq != 29 || !v.Keyed {
		t.Fatalf("verified %d records, seq %d to %d, keyed %v; want 29, 1 to 29, keyed", v.Records, v.FirstSeq, v.LastSeq, v.Keyed)
	}
	// The files are given newest first (as a glob names them): a result
	// in the file after its call's is still counted with it.
	s, err := Report(files, Filter{}, ReportOptions{VerifyOptions: VerifyOptions{Keys: audit.NewKeyring([][]byte{key}, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Verified || len(s.Principals) != 1 || s.Principals[0].Principal != "alice" || s.Principals[0].Calls != 8 || len(s.Denials) == 0 {
		t.Fatalf("report: verified %v, %+v", s.Verified, s.Principals)
	}
	if tools := s.Principals[0].Tools; len(tools) != 1 || tools[0].Outcomes[audit.OutcomeOK] != 8 {
		t.Fatalf("alice's tools = %+v; want list_workflows, ok=8", tools)
	}
}

// TestALogWrittenBySchemaVersion2StillVerifies: audit/review/testdata/v2 is a
// rotated series written by porthole at schema version 2 (before traceId),
// with signed checkpoints every 5 records, its witness and a restart. It
// verifies whole with its key, public key and witness, and reports: do not
// regenerate these files.
func TestALogWrittenBySchemaVersion2StillVerifies(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/v2/audit.log*")
	if err != nil || len(files) != 6 {
		t.Fatalf("testdata/v2 holds %d files (%v)", len(files), err)
	}
	key, _ := os.ReadFile("testdata/v2/audit.key")
	pub, _ := os.ReadFile("testdata/v2/public.key")
	cps, _, err := audit.ReadCheckpoints("testdata/v2/checkpoints")
	if err != nil || len(cps) == 0 {
		t.Fatalf("checkpoints: %d, %v", len(cps), err)
	}
	ring := audit.NewKeyring([][]byte{key}, []ed25519.PublicKey{pub})
	v, err := VerifyWith(files, VerifyOptions{Keys: ring, Checkpoints: cps})
	if err != nil || !v.OK() {
		t.Fatalf("VerifyWith = %+v, %v", v, err)
	}
	s, err := Report(files, Filter{}, ReportOptions{VerifyOptions: VerifyOptions{Keys: ring, Checkpoints: cps}})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Verified || len(s.Principals) != 1 || s.Principals[0].Calls != 10 || len(s.Denials) == 0 {
		t.Fatalf("report: verified %v, %+v, %d denials", s.Verified, s.Principals, len(s.Denials))
	}
}

// TestAVersion2LogContinuesAtTheCurrentVersion: the v2 series, continued by
// this porthole (a restart after the upgrade), verifies whole, and the new
// records carry the current version, their traceId and profile.
func TestAVersion2LogContinuesAtTheCurrentVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, _ := filepath.Glob("testdata/v2/*")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600)
	}
	key, _ := os.ReadFile(filepath.Join(dir, "audit.key"))
	pub, _ := os.ReadFile(filepath.Join(dir, "public.key"))
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = byte(i + 7) // the key testdata/v2 was signed with
	}
	witness := filepath.Join(t.TempDir(), "checkpoints")
	b, _ := os.ReadFile(filepath.Join(dir, "checkpoints"))
	os.WriteFile(witness, b, 0o600)
	l, err := audit.Open(audit.Config{Path: filepath.Join(dir, "audit.log"), Key: key, MaxBytes: 3000, Signer: ed25519.NewKeyFromSeed(seed), CheckpointPath: witness, CheckpointEvery: 5})
	if err != nil {
		t.Fatal(err)
	}
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	if err := l.Write(context.Background(), audit.Record{Kind: audit.KindCall, RequestID: "req-v3", Principal: "alice", ClientCert: "CN=agent,O=vendor", Transport: "http", Method: "tools/call", Tool: "describe_namespace", TraceID: trace}); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(context.Background(), audit.Record{Kind: audit.KindResult, RequestID: "req-v3", Principal: "alice", Transport: "http", Method: "tools/call", Tool: "describe_namespace", TraceID: trace, Outcome: audit.OutcomeOK, Profile: "vendor"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "audit.log*"))
	cps, _, _ := audit.ReadCheckpoints(witness)
	v, err := VerifyWith(logs, VerifyOptions{Keys: audit.NewKeyring([][]byte{key}, []ed25519.PublicKey{pub}), Checkpoints: cps})
	if err != nil || !v.OK() {
		t.Fatalf("the continued series: %+v, %v", v, err)
	}
	var cur []byte
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		cur = append(cur, b...)
	}
	if !strings.Contains(string(cur), fmt.Sprintf(`"v":%d`, audit.SchemaVersion)) || !strings.Contains(string(cur), `"traceId":"`+trace+`"`) || !strings.Contains(string(cur), `"profile":"\"vendor\""`) ||
		!strings.Contains(string(cur), `"clientCert":"\"CN=agent,O=vendor\""`) {
		t.Fatalf("the new records:\n%s", cur)
	}
}
