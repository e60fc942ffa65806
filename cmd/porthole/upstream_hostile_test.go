package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/gateway/upstream"
	"github.com/porthole-dev/porthole/gateway/upstream/hostiletest"
)

// vmHWMMiB is a process's peak resident set (VmHWM), in MiB.
func vmHWMMiB(t *testing.T, pid int) float64 {
	t.Helper()
	mib := statusMiB(pid, "VmHWM")
	if mib == 0 {
		t.Fatal("no VmHWM in /proc/PID/status")
	}
	return mib
}

// Hostile upstreams of each transport answer every call with 256 MiB (as
// a JSON body, as one event over streamable HTTP and over SSE, as one
// stdio line), 16 calls at once each, and two more send a tool list of
// 256 MiB (a stdio line; endless pages over streamable HTTP) whenever
// porthole reads it. porthole's peak RSS (the binary built without -race)
// stays within 200 MiB of its figure before the attack, every hostile call
// fails with the sentence, and another principal's calls succeed
// throughout.
func TestAHostileUpstreamCannotExhaustPortholesMemory(t *testing.T) {
	const size = 256 << 20
	var hostile atomic.Bool
	gate := filepath.Join(t.TempDir(), "hostile") // the stdio children's switch
	now := func() bool { return hostile.Load() }
	serve := func(srv hostiletest.Server, sse bool) string {
		srv.Hostile = now
		h := srv.Streamable()
		if sse {
			h = srv.SSE()
		}
		hs := httptest.NewServer(h)
		t.Cleanup(hs.Close)
		return hs.URL + "/mcp"
	}
	answer := hostiletest.Server{Mode: hostiletest.ModeAnswer, Size: size}
	eventAnswer := answer
	eventAnswer.Event = true
	var tool mcp.Tool
	if err := json.Unmarshal([]byte(hostiletest.Tool), &tool); err != nil {
		t.Fatal(err)
	}
	pin, err := upstream.Digest(&tool)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	entry := func(name, where string) string {
		return fmt.Sprintf("  - name: %s\n%s    listTTL: 1s\n    tools:\n      - name: blob\n        sha256: %s\n", name, where, pin)
	}
	stdio := func(mode string) string {
		return fmt.Sprintf("    transport: stdio\n    command: %q\n    args: [hostile-upstream, %q, %q]\n", self, mode, gate)
	}
	answering := []string{"h-json", "h-event", "h-sse", "h-stdio"}
	roster := "upstreams:\n" +
		entry("h-json", fmt.Sprintf("    url: %s\n", serve(answer, false))) +
		entry("h-event", fmt.Sprintf("    url: %s\n", serve(eventAnswer, false))) +
		entry("h-sse", fmt.Sprintf("    transport: sse\n    url: %s\n", serve(answer, true))) +
		entry("h-stdio", stdio(fmt.Sprintf("answer:%d", size))) +
		entry("l-pages", fmt.Sprintf("    url: %s\n", serve(hostiletest.Server{Mode: hostiletest.ModeList, Size: 1 << 20}, false))) +
		entry("l-stdio", stdio(fmt.Sprintf("list:%d", size)))
	rosterFile := filepath.Join(t.TempDir(), "roster.yaml")
	if err := os.WriteFile(rosterFile, []byte(roster), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, agent := newToken(t, "hostile-caller")
	other := newTokenIn(t, tokens, "bystander")
	env, _, _ := auditEnv(t)
	env = append(env, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+tokens, "PORTHOLE_ROSTER_FILE="+rosterFile)
	p, line := startPorthole(t, temporalEnv(t, env...), "serving MCP", "serve")
	endpoint := line["endpoint"].(string)
	attacker := connectHTTP(t, endpoint, &recordingTransport{token: agent})
	bystander := connectHTTP(t, endpoint, &recordingTransport{token: other})

	// Before the attack: every upstream connected and answering small.
	waitUntil := func(what string, d time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s:\n%s", what, p.logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	call := func(cs *mcp.ClientSession, name string) (string, bool) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			return err.Error(), true
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return text.String(), res.IsError
	}
	for _, name := range append(answering, "l-pages", "l-stdio") {
		waitUntil(name+" to answer", 30*time.Second, func() bool {
			_, failed := call(attacker, name+"__blob")
			return !failed
		})
	}
	for range 5 {
		if text, failed := call(bystander, "describe_namespace"); failed {
			t.Fatalf("describe_namespace before the attack: %s", text)
		}
	}
	idle := vmHWMMiB(t, p.cmd.Process.Pid)

	// The attack: 16 calls at once to each answering upstream, again as
	// each round ends, while the listing upstreams are read again every
	// second (listTTL) and at each reconnection.
	hostile.Store(true)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const attack = 20 * time.Second
	stop := time.Now().Add(attack)
	var (
		mu       sync.Mutex
		refused  = map[string]int{}
		strange  []string
		wg       sync.WaitGroup
		byFailed atomic.Int64
	)
	for _, name := range answering {
		for range 16 {
			wg.Go(func() {
				for time.Now().Before(stop) {
					text, failed := call(attacker, name+"__blob")
					mu.Lock()
					switch {
					case !failed:
						strange = append(strange, name+" answered: "+text[:min(len(text), 200)])
					case strings.Contains(text, "sent more than porthole accepts"):
						refused[name]++
					case strings.Contains(text, "is not connected"), strings.Contains(text, "Too Many Requests"),
						strings.Contains(text, "porthole was reading as much from its upstreams at once as it allows"):
						// Down between sessions, porthole's own rate
						// limit on the attacker, or the shared budget
						// that the other hostile upstreams keep full
						// (docs/upstreams.md says so): refusals too.
					default:
						strange = append(strange, name+": "+text)
					}
					mu.Unlock()
					time.Sleep(100 * time.Millisecond)
				}
			})
		}
	}
	wg.Go(func() {
		for time.Now().Before(stop) {
			if text, failed := call(bystander, "describe_namespace"); failed {
				byFailed.Add(1)
				t.Errorf("the bystander's describe_namespace failed during the attack: %s", text)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	wg.Wait()
	peak := vmHWMMiB(t, p.cmd.Process.Pid)
	t.Logf("porthole VmHWM: %.0f MiB idle, %.0f MiB after %s of attack (+%.0f MiB); hostile calls refused with the sentence: %v",
		idle, peak, attack, peak-idle, refused)
	if peak-idle > 200 {
		t.Errorf("porthole's peak RSS grew by %.0f MiB under the attack (idle %.0f MiB, peak %.0f MiB); the bound is 200 MiB", peak-idle, idle, peak)
	}
	for _, name := range answering {
		if refused[name] < 16 {
			t.Errorf("%s: %d calls failed with the sentence, want at least 16", name, refused[name])
		}
	}
	logs := p.logs.String()
	for _, s := range strange[:min(len(strange), 5)] {
		t.Errorf("a hostile call ended otherwise: %s", s)
	}
	if len(strange) > 0 {
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, `"upstream call failed"`) && !strings.Contains(l, "more than porthole accepts") {
				t.Logf("porthole: %s", l)
			}
		}
	}
	for name, bound := range map[string]string{"l-pages": "maxListBytes", "l-stdio": "maxMessageBytes"} {
		if !downFor(logs, name, bound) {
			t.Errorf("%s was not marked down for its %s", name, bound)
		}
	}
	if text, failed := call(bystander, "describe_namespace"); failed {
		t.Errorf("describe_namespace after the attack: %s", text)
	}
}

// downFor reports whether porthole's log marks upstream down for a reason
// naming bound.
func downFor(logs, upstreamName, bound string) bool {
	for _, l := range strings.Split(logs, "\n") {
		var line map[string]any
		if json.Unmarshal([]byte(l), &line) == nil && line["msg"] == "upstream down" && line["upstream"] == upstreamName {
			if e, _ := line["error"].(string); strings.Contains(e, bound) {
				return true
			}
		}
	}
	return false
}

// newTokenIn adds a principal to an existing tokens file and returns its
// token.
func newTokenIn(t *testing.T, file, name string) string {
	t.Helper()
	cmd := exec.Command(portholeBin(t), "token", "new", "--name", name, "--tokens-file", file)
	cmd.Env = baseEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("token new: %v", err)
	}
	return strings.TrimSpace(string(out))
}
