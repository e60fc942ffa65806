package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/fastpath"
	"github.com/porthole-dev/porthole/gateway/limit"
	"github.com/porthole-dev/porthole/gateway/rpcdecode"
	"github.com/porthole-dev/porthole/gateway/tokens"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// modern is a 2026-07-28 describe_workflow call with the given client
// capabilities, client info or not, and more _meta members.
func modern(caps string, info bool, more string) string {
	meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps
	if info {
		meta += `,"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}`
	}
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"shipment-running-1"},"_meta":{` + meta + more + `}}}`
}

func modernHeader() http.Header {
	return http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"describe_workflow"}}
}

// TestPlainCallsAnswerAsTheGoSDKWould sends each request twice, once to a
// server whose fast path answers calls directly (gateway/fastpath) and
// once to one that sends everything through the go-sdk's transport
// (Options.GoSDKOnly), and requires the
// same status, headers, bytes and audit records from both. The cases that
// qualify are shown to be answered directly (the go-sdk never sees them),
// so the test compares the two paths, not the go-sdk with itself; the ones
// that do not are shown to go to the go-sdk.
func TestPlainCallsAnswerAsTheGoSDKWould(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokensFile := filepath.Join(dir, "tokens")
	alice, err := tokens.Append(tokensFile, "alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := tokens.Append(tokensFile, "bob")
	if err != nil {
		t.Fatal(err)
	}
	set, err := tokens.Load(tokensFile)
	if err != nil {
		t.Fatal(err)
	}
	// An upstream beside porthole's own tools: its tools' plain calls are
	// answered directly too, and compared here.
	roster := pinnedRoster(t, hostileUpstream(t), "lookup", "picture")
	pf, err := policy.ParseFile([]byte(`{"principals":{"alice":{"tools":["*"]},"bob":{"tools":["describe_namespace"]}}}`), roster.ServedNames()...)
	if err != nil {
		t.Fatal(err)
	}
	type side struct {
		g       *Server
		h       http.Handler
		auditor *fakeAuditor
	}
	build := func(sdkOnly bool) side {
		auditor := &fakeAuditor{}
		g, err := NewServer(&describeReader{}, Options{Namespace: "default", Audit: auditor, Grants: pf.Grants(), CacheTTL: -1, Roster: roster, GoSDKOnly: sdkOnly})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.StartUpstreams(context.Background()))
		temporaltest.Eventually(t, 20*time.Second, "the upstream's tools served", func() bool {
			return g.servedHandler("up__lookup") != nil && g.servedHandler("up__picture") != nil
		})
		h, err := g.Handler(HTTPOptions{Tokens: func() *tokens.Set { return set },
			Limits: limit.Limits{PerPrincipal: 1e6, PerPrincipalBurst: 1e6, Global: 1e6, GlobalBurst: 1e6}})
		if err != nil {
			t.Fatal(err)
		}
		return side{g, h, auditor}
	}
	direct, sdk := build(false), build(true)
	g := direct.g
	answeredDirectly := func(s side) float64 {
		var m dto.Metric
		if err := s.g.metrics.direct.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}

	const (
		call     = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"shipment-running-1"}}}`
		noAccept = "application/json"
	)
	cases := []struct {
		name, body, token string
		header            http.Header
		failAudit         bool
		direct            bool
	}{
		{name: "answer", body: call, direct: true},
		{name: "answer with HTML in it", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"<a&b>"}}}`, direct: true},
		{name: "string id", body: `{"jsonrpc":"2.0","id":"a\u0041\"b","method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"w"}}}`, direct: true},
		{name: "negative id", body: `{"jsonrpc":"2.0","id":-9007199254740991,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"w"}}}`, direct: true},
		{name: "escaped name", body: `{"jsonrpc":"2.0","id":2,"params":{"arguments":{"workflowId":"w"},"name":"describe\u005fworkflow"},"method":"tools/call"}`, direct: true},
		{name: "no arguments", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"describe_namespace"}}`, direct: true},
		{name: "reader failure", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_workflows","arguments":{}}}`, direct: true},
		{name: "unknown argument", body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"w","x":1}}}`, direct: true},
		{name: "argument of the wrong type", body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":7}}}`, direct: true},
		{name: "argument out of bounds", body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_workflows","arguments":{"pageSize":100000}}}`, direct: true},
		{name: "missing argument", body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"describe_workflow","arguments":{}}}`, direct: true},
		{name: "not granted", body: call, token: bob, direct: true},
		{name: "granted", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"describe_namespace","arguments":{}}}`, token: bob, direct: true},
		{name: "audit sink failing", body: call, failAudit: true, direct: true},
		{name: "accept with parameters", body: call, header: http.Header{"Accept": {"text/event-stream;q=0.5", "Application/JSON; charset=utf-8"}}, direct: true},
		{name: "session id header ignored by a stateless server", body: call, header: http.Header{"Mcp-Session-Id": {"abc"}}},
		{name: "upstream tool", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__lookup","arguments":{"q":"x"}}}`, direct: true},
		{name: "upstream tool withholding what it cannot quote", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__picture","arguments":{}}}`, direct: true},
		{name: "upstream tool with an argument it does not declare", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__lookup","arguments":{"zzz":1}}}`, direct: true},
		{name: "upstream tool without arguments", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__lookup"}}`, direct: true},
		{name: "upstream tool not granted", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__lookup","arguments":{"q":"x"}}}`, token: bob, direct: true},
		{name: "upstream tool, audit sink failing", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__lookup","arguments":{"q":"x"}}}`, failAudit: true, direct: true},
		{name: "upstream tool the roster does not name", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__other","arguments":{}}}`},
		{name: "upstream tool in 2026-07-28's form", body: strings.Replace(strings.Replace(modern(`{}`, true, ""), `"describe_workflow"`, `"up__lookup"`, 1), `"workflowId":"shipment-running-1"`, `"q":"x"`, 1),
			header: func() http.Header { h := modernHeader(); h.Set("Mcp-Name", "up__lookup"); return h }()},

		{name: "tools/list", body: listToolsBody},
		{name: "meta", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"w"},"_meta":{"progressToken":1}}}`},
		// A fractional id, or one past 2^53, is refused before either
		// path (rpcdecode's TestAnIDThatIsNoSafeIntegerIsRefused).
		{name: "null id", body: `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"w"}}}`},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"w"}}}`},
		{name: "arguments not an object", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":[1]}}`},
		{name: "null arguments", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":null}}`},
		{name: "unknown tool", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"terminate_workflow","arguments":{}}}`},
		{name: "protocol 2026-07-28", body: call, header: http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"describe_workflow"}}},
		{name: "2026-07-28 with its metadata", body: modern(`{}`, true, ""), header: modernHeader(), direct: true},
		{name: "2026-07-28 without client info", body: modern(`{}`, false, ""), header: modernHeader(), direct: true},
		{name: "2026-07-28 with roots", body: modern(`{"roots":{"listChanged":true},"sampling":{}}`, true, ""), header: modernHeader(), direct: true},
		{name: "2026-07-28 not granted", body: modern(`{}`, true, ""), header: modernHeader(), token: bob, direct: true},
		{name: "2026-07-28 granted", body: strings.Replace(strings.Replace(modern(`{}`, true, ""), `"describe_workflow"`, `"describe_namespace"`, 1), `"workflowId":"shipment-running-1"`, ``, 1), header: func() http.Header { h := modernHeader(); h.Set("Mcp-Name", "describe_namespace"); return h }(), token: bob, direct: true},
		{name: "2026-07-28 reader failure", body: strings.Replace(strings.Replace(modern(`{}`, true, ""), `"describe_workflow"`, `"list_workflows"`, 1), `"workflowId":"shipment-running-1"`, ``, 1), header: func() http.Header { h := modernHeader(); h.Set("Mcp-Name", "list_workflows"); return h }(), direct: true},
		{name: "2026-07-28 unknown argument", body: strings.Replace(modern(`{}`, true, ""), `"workflowId":"shipment-running-1"`, `"workflowId":"w","x":1`, 1), header: modernHeader(), direct: true},
		{name: "2026-07-28 audit sink failing", body: modern(`{}`, true, ""), header: modernHeader(), failAudit: true, direct: true},
		{name: "2026-07-28 with HTML in the answer", body: strings.Replace(modern(`{}`, true, ""), `"workflowId":"shipment-running-1"`, `"workflowId":"<a&b>"`, 1), header: modernHeader(), direct: true},
		{name: "2026-07-28 with a progress token", body: modern(`{}`, true, `,"progressToken":1`), header: modernHeader()},
		{name: "2026-07-28 with a log level", body: modern(`{}`, true, `,"io.modelcontextprotocol/logLevel":"debug"`), header: modernHeader()},
		{name: "2026-07-28 without capabilities", body: strings.Replace(modern(`{}`, true, ""), `"io.modelcontextprotocol/clientCapabilities":{},`, ``, 1), header: modernHeader()},
		{name: "2026-07-28 with capabilities of the wrong shape", body: modern(`{"roots":5}`, true, ""), header: modernHeader()},
		{name: "2026-07-28 with client info of the wrong shape", body: strings.Replace(modern(`{}`, true, ""), `{"name":"t","version":"1"}`, `"t"`, 1), header: modernHeader()},
		{name: "2026-07-28 naming another version in _meta", body: strings.Replace(modern(`{}`, true, ""), `/protocolVersion":"2026-07-28"`, `/protocolVersion":"2099-01-01"`, 1), header: modernHeader()},
		{name: "2026-07-28 with a parameter header", body: modern(`{}`, true, ""), header: func() http.Header { h := modernHeader(); h.Set("Mcp-Param-Workflowid", "x"); return h }()},
		{name: "2026-07-28 accepting JSON only", body: modern(`{}`, true, ""), header: func() http.Header { h := modernHeader(); h.Set("Accept", noAccept); return h }()},
		{name: "unsupported protocol", body: call, header: http.Header{"Mcp-Protocol-Version": {"2099-01-01"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"describe_workflow"}}},
		{name: "two protocol headers", body: call, header: http.Header{"Mcp-Protocol-Version": {"2025-06-18", "2025-11-25"}}},
		{name: "Mcp-Method header", body: call, header: http.Header{"Mcp-Method": {"tools/list"}}},
		{name: "Last-Event-ID", body: call, header: http.Header{"Last-Event-Id": {"1"}}},
		{name: "accept JSON only", body: call, header: http.Header{"Accept": {noAccept}}},
		{name: "accept anything", body: call, header: http.Header{"Accept": {"*/*"}}},
	}
	// Every version answered directly is one the go-sdk serves: each is
	// compared here.
	for _, v := range fastpath.PlainVersions() {
		if v != "" {
			cases = append(cases, struct {
				name, body, token string
				header            http.Header
				failAudit         bool
				direct            bool
			}{name: "protocol " + v, body: call, header: http.Header{"Mcp-Protocol-Version": {v}}, direct: true})
		}
	}
	if len(fastpath.PlainVersions()) < 5 {
		t.Errorf("answered directly under %d protocol versions; the go-sdk v1.8.0 serves four before 2026-07-28", len(fastpath.PlainVersions())-1)
	}
	// callOwnTool refuses a tool it finds no handler for (an upstream's,
	// withdrawn after the receiving middleware let its call through) with
	// the error the go-sdk's server gives a tool it does not serve: the
	// error alone is compared here (the audit middleware words it for the
	// client on either path).
	t.Run("a tool with no handler", func(t *testing.T) {
		bare := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
		st, ct := mcp.NewInMemoryTransports()
		ss, err := bare.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		_, sdkErr := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__other"})
		_, callErr := g.callOwnTool(context.Background(), "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "up__other", Arguments: json.RawMessage(`{}`)}})
		var want, got *jsonrpc.Error
		if !errors.As(sdkErr, &want) || !errors.As(callErr, &got) || got.Code != want.Code || got.Message != want.Message {
			t.Errorf("direct: %#v\ngo-sdk: %#v", callErr, sdkErr)
		}
	})
	times := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	for _, c := range cases {
		send := func(side side) (int, http.Header, string, []audit.Record) {
			h, auditor := side.h, side.auditor
			req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			token := c.token
			if token == "" {
				token = alice
			}
			req.Header.Set("Authorization", "Bearer "+token)
			for k, v := range c.header {
				req.Header[k] = v
			}
			auditor.mu.Lock()
			auditor.records, auditor.err = nil, nil
			if c.failAudit {
				auditor.err = errors.New("sink full")
			}
			auditor.mu.Unlock()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			recs := auditor.all()
			for i := range recs {
				recs[i].RequestID, recs[i].Duration = "", 0
			}
			resp := rec.Result()
			b, _ := io.ReadAll(resp.Body)
			resp.Header.Del(RequestIDHeader)
			// A time's fractional seconds are as long as they are (an
			// upstream's answer carries when porthole read it): what
			// measures the answer is held to the answer itself.
			if cl := resp.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(b)) {
				t.Errorf("Content-Length %s of a body of %d bytes", cl, len(b))
			}
			resp.Header.Del("Content-Length")
			// A result's size counts each time once as text and once as
			// structured content, as the body does.
			for i := range recs {
				if recs[i].ResultBytes > 0 {
					recs[i].ResultBytes -= len(b) - len(times.ReplaceAllString(string(b), "T"))
				}
			}
			return resp.StatusCode, resp.Header, times.ReplaceAllString(string(b), "T"), recs
		}
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(c.body))
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range c.header {
				req.Header[k] = v
			}
			before := answeredDirectly(direct)
			ds, dh, db, da := send(direct)
			if went := answeredDirectly(direct) > before; went != c.direct {
				t.Fatalf("answered directly: %v, want %v", went, c.direct)
			}
			ss, sh, sb, sa := send(sdk)
			if answeredDirectly(sdk) != 0 {
				t.Fatal("a server with GoSDKOnly answered a call directly")
			}
			if ds != ss || db != sb {
				t.Fatalf("direct: %d %s\ngo-sdk: %d %s", ds, db, ss, sb)
			}
			if !reflect.DeepEqual(dh, sh) {
				t.Errorf("headers: direct %v, go-sdk %v", dh, sh)
			}
			if !reflect.DeepEqual(da, sa) {
				t.Errorf("audit records:\ndirect %+v\ngo-sdk %+v", da, sa)
			}
			if ds == http.StatusTooManyRequests || c.direct && (ds != http.StatusOK || !strings.Contains(db, `"jsonrpc":"2.0"`)) {
				t.Errorf("not an answer: %d %s", ds, db)
			}
		})
	}
}

// FuzzModernMetaTheGoSDKAccepts: whatever 2026-07-28 _meta (client
// capabilities and client info, as any JSON) porthole's direct path takes
// (modernMeta), the go-sdk takes too, answering the call rather than
// refusing it: a call answered directly is one the go-sdk would have
// answered. (TestPlainCallsAnswerAsTheGoSDKWould holds the bytes equal.)
func FuzzModernMetaTheGoSDKAccepts(f *testing.F) {
	for _, seed := range [][2]string{
		{`{}`, `{"name":"t","version":"1"}`}, {`{"roots":{"listChanged":true}}`, ``}, {`{"roots":5}`, `{}`},
		{`{"sampling":{},"elicitation":{"form":{}}}`, `{"name":"t"}`}, {`{"experimental":{"x":{}}}`, `null`},
		{`{"roots":null}`, `{"name":1}`}, {`{"ROOTS":{"listChanged":"yes"}}`, `{"version":"1","icons":[{"src":"x"}]}`},
	} {
		f.Add(seed[0], seed[1])
	}
	dir := f.TempDir()
	tokensFile := filepath.Join(dir, "tokens")
	alice, err := tokens.Append(tokensFile, "alice")
	if err != nil {
		f.Fatal(err)
	}
	set, err := tokens.Load(tokensFile)
	if err != nil {
		f.Fatal(err)
	}
	g, err := NewServer(&describeReader{}, Options{Namespace: "default", Audit: &fakeAuditor{}, CacheTTL: -1, GoSDKOnly: true})
	if err != nil {
		f.Fatal(err)
	}
	sdk, err := g.Handler(HTTPOptions{Tokens: func() *tokens.Set { return set },
		Limits: limit.Limits{PerPrincipal: 1e9, PerPrincipalBurst: 1e9, Global: 1e9, GlobalBurst: 1e9}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, caps, info string) {
		meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps
		if info != "" {
			meta += `,"io.modelcontextprotocol/clientInfo":` + info
		}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"w"},"_meta":{` + meta + `}}}`
		env, err := rpcdecode.Decode([]byte(body))
		if err != nil {
			return
		}
		if !fastpath.TakesModernMeta(env.Params) {
			return
		}
		req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
		for k, v := range modernHeader() {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+alice)
		rec := httptest.NewRecorder()
		sdk.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"result"`) || strings.Contains(rec.Body.String(), `"isError":true`) {
			t.Fatalf("porthole takes _meta {%s} as a 2026-07-28 call's; the go-sdk answers %d %s", meta, rec.Code, rec.Body.String())
		}
	})
}
