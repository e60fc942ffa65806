package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/gateway/limit/redislimit/redistest"
)

// What the chart renders is run here: each replica's porthole container is
// started with the rendered environment, its volume mounts laid out under a
// directory of its own (each Secret item a file at the path the item names,
// each claim an empty directory), and each replica's trail is verified as a
// reviewer would, with the public key and its checkpoint file. No cluster runs
// here: the kubelet, the claims' provisioner and the image are not tested.

// secretFiles holds the test's Secrets: Secret name, then key, then the
// file holding the value.
type secretFiles map[string]map[string]string

// replicaOnDisk is one replica of the rendered StatefulSet: its mounts
// under root, and the environment its container would get, with each path
// moved under root.
type replicaOnDisk struct {
	root             string
	env              []string
	log, checkpoints string
	operationsLog    strings.Builder
}

// layOut lays a replica's mounts out under a fresh directory and maps the
// container's environment onto them. It fails t when a file porthole is
// given is on no mounted volume (the root file system is read-only), or a
// mount's volume is neither a pod volume nor a claim template.
func layOut(t *testing.T, a auditPaths, secrets secretFiles) *replicaOnDisk {
	t.Helper()
	r := &replicaOnDisk{root: t.TempDir()}
	volumes := volumesOf(a.pod)
	for path, name := range a.mounts {
		dir := filepath.Join(r.root, path)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		v, inPod := volumes[name]
		if _, claimed := a.claims[name]; !inPod && !claimed {
			t.Fatalf("mount %s names volume %s, which is neither a pod volume nor a claim template", path, name)
		}
		secret, _ := dig(v, "secret", "secretName").(string)
		for _, item := range asList(dig(v, "secret", "items")) {
			from := secrets[secret][dig(item, "key").(string)]
			b, err := os.ReadFile(from)
			if err != nil {
				t.Fatalf("Secret %s key %v: %v", secret, dig(item, "key"), err)
			}
			if err := os.WriteFile(filepath.Join(dir, dig(item, "path").(string)), b, 0o400); err != nil {
				t.Fatal(err)
			}
		}
	}
	var env []string
	for name, value := range a.env {
		switch name {
		case "PORTHOLE_ADDR", "PORTHOLE_ADMIN_ADDR", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE":
			continue // the pod's network and cluster; the test has its own
		}
		if strings.HasPrefix(value, "/") {
			if mountOf(a.mounts, value) == "" {
				t.Errorf("%s=%s is on no mounted volume, and the root file system is read-only", name, value)
			}
			value = filepath.Join(r.root, value)
		}
		env = append(env, name+"="+value)
	}
	slices.Sort(env)
	r.log, r.checkpoints = filepath.Join(r.root, a.log), filepath.Join(r.root, a.checkpoints)
	// Here every directory is on one file system, so porthole's check that
	// the checkpoint file is on another volume than the log is turned off
	// for this test alone; in a pod the two are separate claims.
	r.env = temporalEnv(t, append(env, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME=true")...)
	return r
}

// serve runs the replica's porthole, makes calls, and stops it.
func (r *replicaOnDisk) serve(t *testing.T, token string, calls int) {
	t.Helper()
	p, line := startPorthole(t, r.env, "serving MCP", "serve")
	for i := 0; i < calls; i++ {
		if a := callRaw(line["endpoint"].(string), token, "describe_namespace", nil); a.status != http.StatusOK || a.isError {
			t.Fatalf("call %d: %+v", i, a)
		}
	}
	p.stop(t)
	r.operationsLog.WriteString(p.logs.String())
}

func (r *replicaOnDisk) files(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(r.log + "*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no audit log at %s: %v", r.log, err)
	}
	return files
}

// TestChartDeployedReplicasEachWriteATrailThatVerifies: two replicas of
// the rendered StatefulSet, one restarted, each write a rotated trail of
// their own, and none of it to the operations log. A reviewer holding the
// public key proves each trail complete with its checkpoint file, and with
// the checkpoints its operations log carries; one replica's checkpoint file
// refuses the other's trail. The trail's lines, as a log store may return
// them (out of order, one twice), are put back in order as
// docs/deployment.md says and verify the same way.
func TestChartDeployedReplicasEachWriteATrailThatVerifies(t *testing.T) {
	t.Parallel()
	// Small files and frequent checkpoints, so each trail rotates and is
	// checkpointed many times. (Rendered first: without helm, or under -short,
	// nothing else is done.)
	docs, stderr, err := helmTemplate(t, withAuditKeys("audit.maxBytes=4096", "audit.maxAge=2s", "env.PORTHOLE_AUDIT_CHECKPOINT_EVERY=5")...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	a := auditPathsOf(t, docs)
	keys := t.TempDir()
	signingKey, publicKey := keygen(t, keys, "signing")
	auditKey := filepath.Join(keys, "audit.key")
	if err := os.WriteFile(auditKey, []byte("chart-test-audit-key-0123456789abcdef0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokensFile, token := newToken(t, "chart-agent")
	secrets := secretFiles{
		"porthole-tokens":            {"tokens": tokensFile},
		"porthole-admin-tokens":      {"admin-tokens": tokensFile},
		"porthole-audit-key":         {"audit-key": auditKey},
		"porthole-audit-signing-key": {"signing-key": signingKey},
	}
	replicas := []*replicaOnDisk{layOut(t, a, secrets), layOut(t, a, secrets)}
	replicas[0].serve(t, token, 6)
	time.Sleep(2500 * time.Millisecond) // past audit.maxAge: the restart prunes the first files
	replicas[0].serve(t, token, 4)      // a restart: the chain continues on the same volume
	replicas[1].serve(t, token, 5)

	verify := func(args ...string) (string, error) {
		out, err := execPorthole(t, baseEnv(), append([]string{"audit", "verify", "--public-key", publicKey}, args...)...).CombinedOutput()
		return string(out), err
	}
	proven := func(out string, err error) bool {
		return err == nil && strings.Contains(out, "OK:") && strings.Contains(out, "proven by") && !strings.Contains(out, "cannot be proven")
	}
	for i, r := range replicas {
		if strings.Contains(r.operationsLog.String(), `"mac":`) {
			t.Errorf("replica %d: an audit record is in the operations log:\n%s", i, r.operationsLog.String())
		}
		files := r.files(t)
		if len(files) < 2 {
			t.Errorf("replica %d: the trail did not rotate (%d file)", i, len(files))
		}
		out, err := verify(append([]string{"--key-file", auditKey, "--checkpoints", r.checkpoints}, files...)...)
		if !proven(out, err) {
			t.Errorf("replica %d: verify with its checkpoint file: %v\n%s", i, err, out)
		}
		if i == 0 && !strings.Contains(out, "were pruned") {
			t.Errorf("replica 0's restart past audit.maxAge pruned nothing:\n%s", out)
		}
		collected := filepath.Join(t.TempDir(), "checkpoints")
		if n := collectCheckpoints(t, r.operationsLog.String(), collected); n == 0 {
			t.Errorf("replica %d: no checkpoint in the operations log", i)
		}
		if out, err := verify(append([]string{"--checkpoints", collected}, files...)...); !proven(out, err) {
			t.Errorf("replica %d: verify with the operations log's checkpoints: %v\n%s", i, err, out)
		}
		exported := exportAsAStoreWould(t, files)
		if out, err := verify("--key-file", auditKey, "--checkpoints", collected, exported); !proven(out, err) {
			t.Errorf("replica %d: verify what was put back in order from the store: %v\n%s", i, err, out)
		}
	}
	out, err := verify(append([]string{"--checkpoints", replicas[1].checkpoints}, replicas[0].files(t)...)...)
	// "witness" here is verify's own wording for checkpoints of another chain.
	if err == nil || !strings.Contains(out, "they witness other logs") {
		t.Errorf("replica 0's trail with replica 1's checkpoint file: %v\n%s", err, out)
	}
}

// exportAsAStoreWould returns a file of a trail's lines as docs/deployment.md
// rebuilds them from a log store: the store's lines in any order, one of
// them twice (a shipper delivers at least once), sorted by seq with exact
// duplicates dropped. The lines themselves are not touched.
func exportAsAStoreWould(t *testing.T, files []string) string {
	t.Helper()
	var shipped [][]byte
	for _, f := range slices.Backward(files) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		shipped = append(shipped, bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))...)
	}
	shipped = append(shipped, shipped[len(shipped)/2])
	seqOf := func(line []byte) uint64 {
		var r struct{ Seq uint64 }
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("a shipped line is not a record: %v: %s", err, line)
		}
		return r.Seq
	}
	slices.SortStableFunc(shipped, func(x, y []byte) int {
		return cmp.Or(cmp.Compare(seqOf(x), seqOf(y)), bytes.Compare(x, y))
	})
	shipped = slices.CompactFunc(shipped, bytes.Equal)
	out := filepath.Join(t.TempDir(), "exported.log")
	if err := os.WriteFile(out, append(bytes.Join(shipped, []byte("\n")), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestChartDeployedReplicasShareLimitsInRedis: three replicas of the
// chart rendered with redis.urlSecret, run with the rendered environment
// and a real Redis, enforce one principal limit together (PORTHOLE_REPLICAS
// comes from replicaCount, the URL from the Secret's file).
func TestChartDeployedReplicasShareLimitsInRedis(t *testing.T) {
	t.Parallel()
	docs, stderr, err := helmTemplate(t, withAuditKeys("replicaCount=3", "redis.urlSecret.name=porthole-redis", "redis.failure=local",
		"env.PORTHOLE_RATE_PER_PRINCIPAL=0.001", "env.PORTHOLE_RATE_PER_PRINCIPAL_BURST=6")...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	a := auditPathsOf(t, docs)
	if a.env["PORTHOLE_REPLICAS"] != "3" || a.env["PORTHOLE_REDIS_FAILURE"] != "local" || a.env["PORTHOLE_REDIS_URL"] != "" {
		t.Fatalf("rendered Redis settings: %v", a.env)
	}
	redis := redistest.Start(t, redistest.Options{Password: "chart-redis-password-1"})
	keys := t.TempDir()
	signingKey, _ := keygen(t, keys, "signing")
	auditKey, urlFile := filepath.Join(keys, "audit.key"), filepath.Join(keys, "redis-url")
	os.WriteFile(auditKey, []byte("chart-test-audit-key-0123456789abcdef0123456789\n"), 0o600)
	os.WriteFile(urlFile, []byte(redis.URL()+"\n"), 0o600)
	tokensFile, token := newToken(t, "chart-agent")
	secrets := secretFiles{
		"porthole-tokens":            {"tokens": tokensFile},
		"porthole-admin-tokens":      {"admin-tokens": tokensFile},
		"porthole-audit-key":         {"audit-key": auditKey},
		"porthole-audit-signing-key": {"signing-key": signingKey},
		"porthole-redis":             {"url": urlFile},
	}
	var endpoints []string
	for range 3 {
		r := layOut(t, a, secrets)
		p, line := startPorthole(t, r.env, "serving MCP", "serve")
		if strings.Contains(p.logs.String(), "chart-redis-password-1") {
			t.Fatalf("the Redis password is in the operations log:\n%s", p.logs.String())
		}
		endpoints = append(endpoints, line["endpoint"].(string))
	}
	answered := 0
	for i := range 30 {
		if a := callRaw(endpoints[i%3], token, "describe_namespace", nil); a.status == http.StatusOK {
			answered++
		}
	}
	if answered != 6 {
		t.Fatalf("%d of 30 calls over three replicas answered; the shared burst is 6", answered)
	}
}
