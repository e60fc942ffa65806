package main

import (
	"bufio"
	"bytes"
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
	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/merkle"
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
// every witness takes its checkpoints again. verify, given the witnesses'
// keys and what they cosigned, proves the trail to the tree all three
// cosigned; with the trail's end cut and its cosignatures deleted, the
// two porthole witnesses, asked, show the cut; and a forked checkpoint,
// signed with porthole's own key, is refused by a witness and logged.
func TestPortholeSendsEveryCheckpointToTwoWitnessesAndTheOmniwitness(t *testing.T) {
	t.Parallel()
	priv, pub := keygen(t, t.TempDir(), "signing")
	out, err := execPorthole(t, baseEnv(), "audit", "note-key", "--public-key", pub, "--origin", e2eOrigin).Output()
	if err != nil {
		t.Fatal(err)
	}
	logKey := strings.TrimSpace(string(out))
	vkeys := map[string]string{}
	var list, urls []string
	witnesses := map[string]func() *process{}
	for _, name := range []string{"witness.test/w1", "witness.test/w2"} {
		keyFile, vkey := witnessKey(t, name)
		state, addr := t.TempDir(), freeAddr(t)
		witnesses[name] = func() *process {
			p, _ := startPorthole(t, baseEnv(), "witness serving", "witness", "serve", "--key-file", keyFile, "--log-key", logKey, "--state-dir", state, "--listen", addr)
			return p
		}
		vkeys[name], list, urls = vkey, append(list, "http://"+addr+" "+vkey), append(urls, "http://"+addr)
	}
	omniKey, omniVkey := witnessKey(t, "witness.test/omni")
	vkeys["witness.test/omni"], list = omniVkey, append(list, startOmniwitness(t, omniKey, logKey)+" "+omniVkey)
	running := map[string]*process{}
	for name, start := range witnesses {
		running[name] = start()
	}

	file, token := newToken(t, "auditor-test")
	env, logPath, keyPath := auditEnv(t)
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

	verify := func(files []string, args ...string) (string, error) {
		args = append([]string{"audit", "verify", "--key-file", keyPath, "--public-key", pub, "--origin", e2eOrigin}, args...)
		for _, n := range all {
			args = append(args, "--witness-key", vkeys[n])
		}
		out, err := execPorthole(t, baseEnv(), append(args, files...)...).CombinedOutput()
		return string(out), err
	}
	files, _ := filepath.Glob(logPath + "*")
	withWitnesses := []string{"--witness-quorum", "3", "--cosigned", cosignatures, "--witness", urls[0], "--witness", urls[1]}
	if out, err := verify(files, withWitnesses...); err != nil || !strings.Contains(out, "witnessed: seq 1 to") {
		t.Fatalf("verify with the witnesses: %v\n%s", err, out)
	}
	report := append([]string{"audit", "report", "--key-file", keyPath, "--public-key", pub, "--origin", e2eOrigin}, withWitnesses...)
	for _, n := range all {
		report = append(report, "--witness-key", vkeys[n])
	}
	if out, err := execPorthole(t, baseEnv(), append(report, files...)...).CombinedOutput(); err != nil || !strings.Contains(string(out), "witnessed: seq 1 to") {
		t.Fatalf("report with the witnesses: %v\n%s", err, out)
	}

	// The end cut, and the cosignatures and checkpoint files gone: the
	// porthole witnesses, asked, hold the tree the trail no longer makes.
	lines := bytes.SplitAfter(mustRead(t, logPath), []byte("\n"))
	os.WriteFile(logPath, bytes.Join(lines[:len(lines)-12], nil), 0o600)
	os.Remove(cosignatures)
	files, _ = filepath.Glob(logPath + "*")
	if out, err := verify(files, "--witness-quorum", "2", "--witness", urls[0], "--witness", urls[1]); err == nil || !strings.Contains(out, "the end of the trail was cut") {
		t.Fatalf("verify of a trail cut, against the witnesses: %v\n%s", err, out)
	}

	// A fork: another tree of the size a witness cosigned last, signed
	// with porthole's own key.
	latest := fetchLatest(t, urls[0], e2eOrigin)
	signer, _, err := readSigningKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	forked, err := merkle.SignCheckpoint(merkle.Checkpoint{Origin: e2eOrigin, Size: latest.Size, Root: tlog.Hash{1}}, merkle.NewSigner(e2eOrigin, signer))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(urls[0]+"/add-checkpoint", "text/plain", bytes.NewReader(witness.RequestBody(latest.Size, nil, forked)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(running["witness.test/w1"].logs.String(), "witness refused a checkpoint the log signed") {
		t.Fatalf("a forked checkpoint: %d\n%s", resp.StatusCode, running["witness.test/w1"].logs)
	}
}

// fetchLatest is the latest checkpoint a porthole witness cosigned of
// origin.
func fetchLatest(t *testing.T, base, origin string) merkle.Checkpoint {
	t.Helper()
	resp, err := http.Get(base + "/checkpoint?origin=" + origin)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	text, _, _ := strings.Cut(string(b), "\n\n")
	cp, err := merkle.ParseText(text + "\n")
	if err != nil {
		t.Fatalf("the witness's latest: %v\n%s", err, b)
	}
	return cp
}
