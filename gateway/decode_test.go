package gateway

import (
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/audit"
)

func TestStrictDecodingRefusesAmbiguousBodies(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{})
	cases := []struct {
		name, body, contentType string
		want                    int
	}{
		{"a duplicate key", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","name":"list_workflows","arguments":{}}}`, "application/json", 400},
		{"a case variant", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","NAME":"list_workflows","arguments":{}}}`, "application/json", 400},
		{"the tool's name in another case", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"describe_namespace","arguments":{}}}`, "application/json", 400},
		{"a Kelvin-sign variant", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","arguments":{"\u212aey":1,"key":2}}}`, "application/json", 400},
		{"a nested duplicate", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"a","workflowId":"b"}}}`, "application/json", 400},
		{"a batch", `[` + callBody("describe_namespace") + `]`, "application/json", 400},
		{"trailing data", callBody("describe_namespace") + `{}`, "application/json", 400},
		{"trailing garbage", callBody("describe_namespace") + ` x`, "application/json", 400},
		{"not JSON", `{"jsonrpc":`, "application/json", 400},
		{"a response instead of a request", `{"jsonrpc":"2.0","id":1,"result":{}}`, "application/json", 400},
		{"an unknown member", `{"jsonrpc":"2.0","id":1,"method":"tools/list","extra":1}`, "application/json", 400},
		{"a wrong version", `{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, "application/json", 400},
		{"deep nesting", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}}}`, "application/json", 400},
		{"a wrong content type", callBody("describe_namespace"), "text/plain", 415},
		{"no content type", callBody("describe_namespace"), "", 415},
		{"a body over the cap", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", MaxBodyBytes) + `"}}`, "application/json", 413},
	}
	for _, tc := range cases {
		h := bearer(f.alice)
		h.Set("Content-Type", tc.contentType)
		status, hdr, body := f.do(t, "POST", "/mcp", h, tc.body)
		if status != tc.want {
			t.Errorf("%s: status %d, want %d (%.200s)", tc.name, status, tc.want, body)
		}
		if status >= 400 && status != 413 && strings.HasPrefix(hdr.Get("Content-Type"), "application/json") && !strings.Contains(body, `"error"`) {
			t.Errorf("%s: refusal %q is not a JSON-RPC error", tc.name, body)
		}
	}
	if n := f.reader.count(); n != 0 {
		t.Fatalf("%d refused bodies reached Temporal", n)
	}
	for _, r := range f.auditor.all() {
		if r.Kind != audit.KindDenial {
			t.Fatalf("a refused body left a %s record; each should be a denial", r.Kind)
		}
	}
}

// TestHeadersThatDisagreeWithTheBodyAreRefusedAtTheDecoder: a 2026-07-28
// request whose Mcp-Method or Mcp-Name says one thing and whose body
// another is refused with 400 and the go-sdk's header-mismatch code by
// porthole's decoder, with a denial record, before the rate limiter
// charges the body's tool or the call is recorded; agreeing headers pass.
func TestHeadersThatDisagreeWithTheBodyAreRefusedAtTheDecoder(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{})
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","arguments":{},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`
	for _, tc := range []struct {
		name, method, tool string
		want               int
	}{
		{"another tool in Mcp-Name", "tools/call", "describe_workflow", 400},
		{"another method in Mcp-Method", "tools/list", "describe_namespace", 400},
		{"no Mcp-Name", "tools/call", "", 400},
		// A value long enough that a refusal quoting it cut to fit would
		// cut inside the token (found by review): refusals quote no value.
		{"a secret in Mcp-Name", "tools/call", strings.Repeat("x", 240) + " ghp_" + strings.Repeat("a1B2", 9), 400},
		{"agreeing headers", "tools/call", "describe_namespace", 200},
	} {
		h := bearer(f.alice)
		h.Set("Content-Type", "application/json")
		h.Set("Mcp-Protocol-Version", "2026-07-28")
		h.Set("Mcp-Method", tc.method)
		if tc.tool != "" {
			h.Set("Mcp-Name", tc.tool)
		}
		status, _, body := f.do(t, "POST", "/mcp", h, call)
		if status != tc.want || (tc.want == 400 && !strings.Contains(body, `"code":-32020`)) || strings.Contains(body, "ghp_") {
			t.Errorf("%s: status %d, want %d (%.300s)", tc.name, status, tc.want, body)
		}
	}
	var denials, calls int
	for _, r := range f.auditor.all() {
		switch r.Kind {
		case audit.KindDenial:
			denials++
			if !strings.Contains(r.Reason, "standard headers disagree") || strings.Contains(r.Reason, "ghp_") {
				t.Errorf("denial reason %q", r.Reason)
			}
		case audit.KindCall:
			calls++
		}
	}
	if denials != 4 || calls != 1 {
		t.Errorf("%d denials and %d call records, want 4 and 1", denials, calls)
	}
}
