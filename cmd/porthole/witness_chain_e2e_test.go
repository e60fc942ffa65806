package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/witness"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// omniwitnessVersion is the omniwitness `make omniwitness` installs.
const omniwitnessVersion = "2e1c6971d19e"

// omniwitnessBin is the omniwitness binary; under -short it skips t.
func omniwitnessBin(t *testing.T) string {
	t.Helper()
	temporaltest.Needs(t, "the omniwitness")
	bin := os.Getenv("PORTHOLE_OMNIWITNESS")
	if bin == "" { // where `make omniwitness` puts it
		bin = filepath.Join(filepath.Dir(filepath.Dir(temporaltest.DefaultCLIPath())), "omniwitness-"+omniwitnessVersion, "omniwitness")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the omniwitness is not installed (PORTHOLE_OMNIWITNESS=%q): run `make omniwitness`, or `make test`, which does", bin)
	}
	return bin
}

// freeAddr is a loopback address nothing listens on, for a server that
// cannot be told to pick its own.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startOmniwitness runs the omniwitness with the signer key at keyFile,
// witnessing the log of logKey, and returns its URL.
func startOmniwitness(t *testing.T, keyFile, logKey string) string {
	t.Helper()
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs.yaml")
	name, _, _ := strings.Cut(logKey, "+")
	yaml := fmt.Sprintf("Logs:\n  - Origin: %q\n    PublicKey: %q\n    URL: \"http://127.0.0.1:1/unused\"\n", name, logKey)
	if err := os.WriteFile(logs, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(omniwitnessBin(t), "--private_key_path", keyFile, "--additional_logs", logs, "--listen", addr, "--metrics_listen", "", "--db_file", filepath.Join(dir, "witness.db"))
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if !temporaltest.Poll(20*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("the omniwitness did not listen on %s:\n%s", addr, out)
	}
	return "http://" + addr
}

// witnessKey writes a witness key named name and returns its files' paths
// and its verifier key.
func witnessKey(t *testing.T, name string) (keyFile, vkey string) {
	t.Helper()
	dir := t.TempDir()
	keyFile, vkeyFile := filepath.Join(dir, "key"), filepath.Join(dir, "vkey")
	if out, err := execPorthole(t, baseEnv(), "witness", "keygen", "--name", name, "--private-key-file", keyFile, "--verifier-key-file", vkeyFile).CombinedOutput(); err != nil {
		t.Fatalf("witness keygen: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(vkeyFile)
	return keyFile, strings.TrimSpace(string(b))
}

// cosignedSizes reads the cosignatures file: the largest size each witness
// cosigned, once each line's checkpoint verifies with the log's key and
// the witness's, with transparency-dev/formats's cosignature/v1 verifier.
func cosignedSizes(t *testing.T, path, logKey string, vkeys map[string]string) map[string]int64 {
	t.Helper()
	sizes := map[string]int64{}
	f, err := os.Open(path)
	if err != nil {
		return sizes
	}
	defer f.Close()
	lv, _ := note.NewVerifier(logKey)
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var c witness.Cosigned
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("a line of the cosignatures file: %v", err)
		}
		v, err := fnote.NewVerifierForCosignatureV1(vkeys[c.Witness])
		if err != nil {
			t.Fatalf("the witness %q: %v", c.Witness, err)
		}
		if n, err := note.Open([]byte(c.Checkpoint), note.VerifierList(v, lv)); err != nil || len(n.Sigs) != 2 {
			t.Fatalf("the cosigned checkpoint of %s: %v", c.Witness, err)
		}
		sizes[c.Witness] = max(sizes[c.Witness], c.Size)
	}
	return sizes
}

// TestPortholeSendsEveryCheckpointToTwoWitnessesAndTheOmniwitness: porthole
// keeps its trail as a tree and sends each checkpoint to two porthole
// witnesses and an omniwitness; each cosigns every one, and the
// cosignatures kept beside the trail verify with transparency-dev/formats.
// A witness stopped falls behind, as /readyz says, while calls go on; it
// catches up once restarted on its state; and after porthole restarts,
// every witness takes its checkpoints again.
func TestPortholeSendsEveryCheckpointToTwoWitnessesAndTheOmniwitness(t *testing.T) {
	t.Parallel()
	priv, pub := keygen(t, t.TempDir(), "signing")
	out, err := execPorthole(t, baseEnv(), "audit", "note-key", "--public-key", pub, "--origin", e2eOrigin).Output()
	if err != nil {
		t.Fatal(err)
	}
	logKey := strings.TrimSpace(string(out))
	vkeys := map[string]string{}
	var list []string
	witnesses := map[string]func() *process{}
	for _, name := range []string{"witness.test/w1", "witness.test/w2"} {
		keyFile, vkey := witnessKey(t, name)
		state, addr := t.TempDir(), freeAddr(t)
		witnesses[name] = func() *process {
			p, _ := startPorthole(t, baseEnv(), "witness serving", "witness", "serve", "--key-file", keyFile, "--log-key", logKey, "--state-dir", state, "--listen", addr)
			return p
		}
		vkeys[name], list = vkey, append(list, "http://"+addr+" "+vkey)
	}
	omniKey, omniVkey := witnessKey(t, "witness.test/omni")
	vkeys["witness.test/omni"], list = omniVkey, append(list, startOmniwitness(t, omniKey, logKey)+" "+omniVkey)
	running := map[string]*process{}
	for name, start := range witnesses {
		running[name] = start()
	}

	file, token := newToken(t, "auditor-test")
	env, logPath, _ := auditEnv(t)
	checkpoints := filepath.Join(t.TempDir(), "checkpoints")
	env = append(env, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_ADMIN_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+file, "PORTHOLE_AUDIT_CHECKPOINT_EVERY=3",
		"PORTHOLE_AUDIT_CHECKPOINT_FILE="+checkpoints, "PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME=true",
		"PORTHOLE_AUDIT_SIGNING_KEY_FILE="+priv, "PORTHOLE_AUDIT_ORIGIN="+e2eOrigin, "PORTHOLE_AUDIT_WITNESSES="+strings.Join(list, ","))
	calls := func(endpoint string, n int) {
		for i := 0; i < n; i++ {
			if a := callRaw(endpoint, token, "describe_namespace", nil); a.status != http.StatusOK || a.isError {
				t.Fatalf("call %d: %+v", i, a)
			}
		}
	}
	cosignatures := logPath + audit.CosignaturesSuffix
	caughtUp := func(names ...string) {
		t.Helper()
		cps, _, err := audit.ReadCheckpoints(checkpoints)
		if err != nil || len(cps) == 0 {
			t.Fatalf("%d checkpoints: %v", len(cps), err)
		}
		want := int64(cps[len(cps)-1].Seq)
		if !temporaltest.Poll(15*time.Second, func() bool {
			sizes := cosignedSizes(t, cosignatures, logKey, vkeys)
			for _, n := range names {
				if sizes[n] < want {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("%v did not all cosign the tree of %d records: %v", names, want, cosignedSizes(t, cosignatures, logKey, vkeys))
		}
	}
	all := []string{"witness.test/w1", "witness.test/w2", "witness.test/omni"}

	p, line := startPorthole(t, temporalEnv(t, env...), "serving MCP", "serve")
	endpoint := line["endpoint"].(string)
	calls(endpoint, 7)
	caughtUp(all...)

	if err := running["witness.test/w2"].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-running["witness.test/w2"].done
	calls(endpoint, 5)
	caughtUp("witness.test/w1", "witness.test/omni")
	admin := adminOf(t, p)
	if !temporaltest.Poll(10*time.Second, func() bool {
		resp, err := http.Get(admin + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(b), "witness witness.test/w2: cosigned") && strings.Contains(string(b), "behind")
	}) {
		t.Fatal("/readyz does not say that witness w2 is behind, or is not ready while the others keep up")
	}
	running["witness.test/w2"] = witnesses["witness.test/w2"]()
	caughtUp(all...)

	p.stop(t)
	p, line = startPorthole(t, temporalEnv(t, env...), "serving MCP", "serve")
	calls(line["endpoint"].(string), 4)
	caughtUp(all...)
	p.stop(t)
}
