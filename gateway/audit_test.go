package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/tokens"
	"github.com/porthole-dev/porthole/temporal/read"
)

func TestNoCallIsDispatchedWhenItsRecordCannotBeWritten(t *testing.T) {
	t.Parallel()
	r := &fakeReader{}
	g, a := newTestServer(t, r)
	a.err = errors.New("disk full")
	cs := connect(t, g)
	for i := 0; i < 1000; i++ {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "describe_namespace"})
		if err == nil || !strings.Contains(err.Error(), "could not write the audit record") {
			t.Fatalf("call %d: error %v, want the audit refusal", i, err)
		}
	}
	if n := r.count(); n != 0 {
		t.Fatalf("%d calls reached the reader without an audit record", n)
	}
	if _, err := cs.ListTools(context.Background(), nil); err == nil {
		t.Fatal("tools/list was answered without an audit record")
	}
}

func TestEachCallLeavesOneCallAndOneResultRecord(t *testing.T) {
	t.Parallel()
	g, a := newTestServer(t, &fakeReader{})
	cs := connect(t, g)
	ctx := context.Background()
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "describe_namespace"})
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_workflows", Arguments: map[string]any{"pageSize": 9999, "query": "WorkflowType = 'x'"}})
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"})
	cs.ListTools(ctx, nil)
	recs := a.all()
	type pair struct {
		kind    audit.Kind
		tool    string
		outcome audit.Outcome
	}
	var got []pair
	for _, r := range recs {
		got = append(got, pair{r.Kind, r.Tool, r.Outcome})
		if r.Principal != PrincipalLocal || r.Transport != "stdio" || r.RequestID == "" {
			t.Errorf("record %+v: want principal local over stdio with a request id", r)
		}
	}
	want := []pair{
		{audit.KindCall, "describe_namespace", ""}, {audit.KindResult, "describe_namespace", audit.OutcomeToolError},
		{audit.KindCall, "list_workflows", ""}, {audit.KindResult, "list_workflows", audit.OutcomeInvalid},
		{audit.KindCall, "no_such_tool", ""}, {audit.KindResult, "no_such_tool", audit.OutcomeDenied},
		{audit.KindCall, "", ""}, {audit.KindResult, "", audit.OutcomeOK},
	}
	if len(got) != len(want) {
		t.Fatalf("records %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if recs[2].RequestID != recs[3].RequestID || recs[0].RequestID == recs[2].RequestID {
		t.Error("a call and its result must share a request id, and calls must not")
	}
	args := recs[2].Args
	if len(args) != 2 || args[0].Name != "pageSize" || args[0].Value != "9999" || args[1].Name != "query" || args[1].Value != "WorkflowType = 'x'" {
		t.Errorf("arguments recorded as %+v", args)
	}
}

func TestAuthenticationFailuresAreAudited(t *testing.T) {
	t.Parallel()
	file := t.TempDir() + "/tokens"
	if _, err := tokens.Append(file, "alice"); err != nil {
		t.Fatal(err)
	}
	set, _ := tokens.Load(file)
	g, a := newTestServer(t, &fakeReader{})
	h, _ := g.Handler(HTTPOptions{Tokens: func() *tokens.Set { return set }})
	srv := httptest.NewServer(h)
	defer srv.Close()
	post(t, srv.URL+"/mcp", http.Header{"Authorization": {"Bearer ph_wrong"}, "User-Agent": {"evil\u202eagent"}}, listToolsBody)
	post(t, srv.URL+"/mcp", nil, listToolsBody)
	recs := a.all()
	if len(recs) != 2 {
		t.Fatalf("records %+v, want two denials", recs)
	}
	for _, r := range recs {
		if r.Kind != audit.KindDenial || r.Outcome != audit.OutcomeUnauthenticated || r.Status != 401 || r.ClientAddr == "" || r.RequestID == "" {
			t.Errorf("denial record %+v", r)
		}
	}
	if recs[0].UserAgent != "evil\u202eagent" || !strings.Contains(recs[0].Reason, "matches no principal") {
		t.Errorf("first denial %+v", recs[0])
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTransportRefusalsAreAudited(t *testing.T) {
	t.Parallel()
	g, a := newTestServer(t, &fakeReader{})
	h, _ := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true})
	srv := httptest.NewServer(h)
	defer srv.Close()
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", MaxBodyBytes) + `"}}`
	cases := []struct {
		name, body string
		status     int
	}{
		{"a body over the cap", big, http.StatusRequestEntityTooLarge},
		{"a body that is not JSON", "{not json", http.StatusBadRequest},
	}
	for _, tc := range cases {
		resp, _ := post(t, srv.URL+"/mcp", nil, tc.body)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
	}
	recs := a.all()
	if len(recs) != len(cases) {
		t.Fatalf("records %+v, want one denial per refusal", recs)
	}
	for i, r := range recs {
		if r.Kind != audit.KindDenial || r.Status != cases[i].status || r.Outcome != audit.OutcomeInvalid {
			t.Errorf("record %d = %+v", i, r)
		}
	}
}

// panickyReader panics where a read would be.
type panickyReader struct{ fakeReader }

func (*panickyReader) DescribeWorkflow(context.Context, read.WorkflowRef) (*read.WorkflowDescription, error) {
	panic("a bug in a read")
}

// TestAPanickingCallStillGetsAResultRecord: a call whose record was written
// and whose handler panicked used to leave no result record (a call that
// seemed never to end), and on the go-sdk's path, which runs handlers on
// goroutines with no recover, it ended the process. Whichever path the call
// takes (answered directly, or through the go-sdk because of its _meta,
// with the cache's shared read on a goroutine of its own or without), it
// now ends with a result record, outcome internal, and a JSON-RPC error.
func TestAPanickingCallStillGetsAResultRecord(t *testing.T) {
	t.Parallel()
	for i, params := range []string{`{"name":"describe_workflow","arguments":{"workflowId":"w"}}`,
		`{"name":"describe_workflow","arguments":{"workflowId":"w"},"_meta":{}}`,
		`{"name":"describe_workflow","arguments":{"workflowId":"w"}}`} {
		// The last call goes through the cache, whose shared read runs on
		// a goroutine of its own.
		ttl := -time.Duration(1)
		if i == 2 {
			ttl = time.Hour
		}
		auditor := &fakeAuditor{}
		g, err := NewServer(&panickyReader{}, Options{Namespace: "default", Audit: auditor, CacheTTL: ttl, Logger: nopLogger()})
		if err != nil {
			t.Fatal(err)
		}
		h, err := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		recs := auditor.all()
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"code":-32603`) || len(recs) != 2 || recs[0].Kind != audit.KindCall ||
			recs[1].Kind != audit.KindResult || recs[1].Outcome != audit.OutcomeInternal || recs[1].RequestID != recs[0].RequestID {
			t.Fatalf("params %s: status %d %s, records %+v", params, rec.Code, rec.Body.String(), recs)
		}
	}
}

// lateAuditor takes call records but answers that they timed out, as a
// slow sink does whose Write returned ErrUnavailable and then wrote.
type lateAuditor struct{ fakeAuditor }

func (a *lateAuditor) Write(ctx context.Context, rec audit.Record) error {
	a.fakeAuditor.Write(ctx, rec)
	if rec.Kind == audit.KindCall {
		return fmt.Errorf("%w: the sink did not finish a write within 2s", audit.ErrUnavailable)
	}
	return nil
}

// TestACallRecordThatLandsLateIsFollowedByAResultSayingTheCallWasNotMade:
// a call record the sink took too long for was written later, with no
// result, and a report counted it as a call made (found by review).
func TestACallRecordThatLandsLateIsFollowedByAResultSayingTheCallWasNotMade(t *testing.T) {
	t.Parallel()
	r, a := &fakeReader{}, &lateAuditor{}
	g, err := NewServer(r, Options{Namespace: "default", Audit: a})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	cs := connect(t, g)
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "describe_namespace"}); err == nil {
		t.Fatal("a call whose record timed out was made")
	}
	recs := a.all()
	if len(recs) != 2 || recs[1].Kind != audit.KindResult || recs[1].RequestID != recs[0].RequestID || !strings.Contains(recs[1].Reason, "the call was not made") {
		t.Fatalf("records %+v", recs)
	}
	if r.count() != 0 {
		t.Fatal("the call reached the reader")
	}
}
