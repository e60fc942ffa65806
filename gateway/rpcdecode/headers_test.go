package rpcdecode

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerVersions are the protocol versions the fuzz target sends: before
// standard headers, none, the version that brought them, and one no server
// serves yet.
var headerVersions = []string{"", "2025-06-18", "2025-11-25", StandardHeadersSince, "2099-01-01"}

// goSDKServer is a go-sdk server over streamable HTTP, stateless, with one
// tool: what porthole hands a request to after its own links.
func goSDKServer() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "reference", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "describe_namespace"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{}, struct{}{}, nil
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

// goSDKRefuses says whether the go-sdk refuses the request (any 4xx), and
// whether because Mcp-Method or Mcp-Name disagrees with the body. (It also
// refuses, with the same code, a Mcp-Protocol-Version that disagrees with
// the body's _meta protocol version: no link of porthole's reads that
// version, so porthole leaves that check to it.)
func goSDKRefuses(t *testing.T, h http.Handler, header http.Header, body string) (refused, mismatch bool) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var resp struct {
		Error *struct {
			Code    int
			Message string
		} `json:"error"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &resp)
	refused = rec.Code >= 400 && rec.Code < 500
	return refused, refused && resp.Error != nil && resp.Error.Code == CodeHeaderMismatch &&
		(strings.Contains(resp.Error.Message, "Mcp-Method") || strings.Contains(resp.Error.Message, "Mcp-Name"))
}

// FuzzHeadersAgreeWithTheGoSDK: for every body Decode accepts, with any
// Mcp-Method and Mcp-Name headers at each protocol version, CheckHeaders
// refuses every request the go-sdk's transport refuses as a header
// mismatch, and refuses nothing the go-sdk would serve: porthole's links
// and the server porthole hands the request to agree on whether the
// headers and the body say the same thing. (The go-sdk checks a request's
// _meta and method first, so a request porthole refuses for its headers
// may be refused by the go-sdk for another reason.) Bodies carry _meta, as
// 2026-07-28 requests do.
func FuzzHeadersAgreeWithTheGoSDK(f *testing.F) {
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	for _, seed := range []struct {
		version            uint8
		method, name, body string
	}{
		{3, "tools/call", "describe_namespace", call},
		{3, "tools/call", "describe_workflow", call},
		{3, "tools/list", "", call},
		{3, "", "describe_namespace", call},
		{3, "tools/call", "", call},
		{2, "tools/list", "x", call},
		{3, "tools/list", "", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"progressToken":1}}}`},
		{3, "prompts/get", "p", `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"q"}}`},
		{3, "prompts/get", "p", `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p"}}`},
		{3, "resources/read", "file:///a", `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///a"}}`},
		{3, "resources/read", "file:///a", `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"URI":"file:///a"}}`},
		{3, "server/discover", "", `{"jsonrpc":"2.0","id":5,"method":"server/discover"}`},
		{3, "Server/Discover", "", `{"jsonrpc":"2.0","id":5,"method":"server/discover"}`},
		{4, "tools/list", "", `{"jsonrpc":"2.0","method":"notifications/cancelled"}`},
		{4, "tools/call", "describe_workflow", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"describe_namespace","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}`},
		{4, "tools/call", "describe_namespace", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"describe_namespace","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}`},
	} {
		f.Add(seed.version, seed.method, seed.name, seed.body)
	}
	for _, s := range decodeSeeds {
		f.Add(uint8(3), "tools/call", "describe_namespace", s)
	}
	h := goSDKServer()
	f.Fuzz(func(t *testing.T, version uint8, method, name, body string) {
		env, err := Decode([]byte(body))
		if err != nil {
			return // refused before the headers are read, by both
		}
		header := http.Header{}
		for k, v := range map[string]string{"Mcp-Protocol-Version": headerVersions[int(version)%len(headerVersions)], "Mcp-Method": method, "Mcp-Name": name} {
			// What an HTTP request can carry: no header value with control
			// characters, none with surrounding blanks (servers trim them).
			if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) || strings.TrimSpace(v) != v {
				continue
			}
			header.Set(k, v)
		}
		perr := CheckHeaders(header, env, []byte(body))
		var d *Error
		if perr != nil && (!errors.As(perr, &d) || d.Code != CodeHeaderMismatch) {
			t.Fatalf("CheckHeaders refused with %v, not a header mismatch", perr)
		}
		refused, mismatch := goSDKRefuses(t, h, header, body)
		if mismatch && perr == nil {
			t.Fatalf("headers %v, body %q: the go-sdk refuses them as disagreeing, porthole does not", header, body)
		}
		if perr != nil && !refused {
			t.Fatalf("headers %v, body %q: porthole refuses (%v), the go-sdk serves the request", header, body, perr)
		}
	})
}

// TestHeadersThatDisagreeWithTheBodyAreRefused: the cases the fuzz target
// starts from, by name.
func TestHeadersThatDisagreeWithTheBodyAreRefused(t *testing.T) {
	t.Parallel()
	call := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace"}}`)
	env, err := Decode(call)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		refused bool
	}{
		{"agreeing headers", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "describe_namespace"}, false},
		{"another tool in Mcp-Name", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "describe_workflow"}, true},
		{"another method in Mcp-Method", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list", "Mcp-Name": "describe_namespace"}, true},
		{"no Mcp-Method", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Name": "describe_namespace"}, true},
		{"no Mcp-Name on a call", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}, true},
		{"an older version, whose requests carry none", map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"}, false},
		{"a later version, checked as the go-sdk checks it", map[string]string{"Mcp-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"}, true},
	} {
		h := http.Header{}
		for k, v := range tc.headers {
			h.Set(k, v)
		}
		if err := CheckHeaders(h, env, call); (err != nil) != tc.refused {
			t.Errorf("%s: %v, want refused %v", tc.name, err, tc.refused)
		}
	}
}
