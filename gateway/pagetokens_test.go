package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/temporal/read"
)

// pagingReader answers history pages with a token of Temporal's that names
// the workflow, and records the tokens it is handed back.
type pagingReader struct {
	*fakeReader
	mu     sync.Mutex
	handed []string
	// tokenSize, when set, is the size of Temporal's token in bytes.
	tokenSize int
}

func (p *pagingReader) GetWorkflowHistory(_ context.Context, req read.HistoryRequest) (*read.History, error) {
	p.mu.Lock()
	p.handed = append(p.handed, req.NextPageToken)
	p.mu.Unlock()
	token := []byte("branch of " + req.WorkflowID)
	if p.tokenSize > 0 {
		token = []byte(strings.Repeat("t", p.tokenSize))
	}
	return &read.History{Observation: read.Observation{Namespace: "default"}, WorkflowID: req.WorkflowID, Events: []read.HistoryEvent{},
		NextPageToken: base64.RawURLEncoding.EncodeToString(token)}, nil
}

func historyPage(t *testing.T, cs *mcp.ClientSession, workflowID, token string) (read.History, string) {
	t.Helper()
	args := map[string]any{"workflowId": workflowID}
	if token != "" {
		args["nextPageToken"] = token
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_workflow_history", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	var h read.History
	if res.IsError {
		return h, res.Content[0].(*mcp.TextContent).Text
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h, ""
}

// A page token is Temporal's bytes, which name a branch of one workflow's
// history that Temporal reads without checking the workflowId beside it:
// handed out raw, workflow A's token sent with workflow B's id read A's
// events labelled as B's. Sealed, it opens only for the call it was issued
// for, and Temporal is never handed a token porthole did not issue for it.
func TestAPageTokenOpensOnlyForTheWorkflowItWasIssuedFor(t *testing.T) {
	t.Parallel()
	r := &pagingReader{fakeReader: &fakeReader{}}
	g := mustServer(t, r)
	cs := connect(t, g)
	page, refused := historyPage(t, cs, "order-a", "")
	if refused != "" || page.NextPageToken == "" {
		t.Fatalf("first page: %q, %+v", refused, page)
	}
	if raw := base64.RawURLEncoding.EncodeToString([]byte("branch of order-a")); page.NextPageToken == raw || strings.Contains(page.NextPageToken, raw) {
		t.Fatal("the page token handed out is Temporal's own")
	}
	if _, refused := historyPage(t, cs, "order-a", page.NextPageToken); refused != "" {
		t.Fatalf("the next page of the same workflow: %s", refused)
	}
	_, refused = historyPage(t, cs, "order-b", page.NextPageToken)
	if !strings.Contains(refused, "nextPageToken: the page token was not issued by porthole for this call") {
		t.Fatalf("workflow A's token with workflow B's id: %q; want a refusal", refused)
	}
	raw := base64.RawURLEncoding.EncodeToString([]byte("branch of order-a"))
	if _, refused = historyPage(t, cs, "order-a", raw); refused == "" {
		t.Fatal("a raw Temporal token was taken")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.handed) != 2 || r.handed[0] != "" || r.handed[1] != raw {
		t.Fatalf("Temporal was handed %q; want the first page's request and the one token porthole issued for order-a", r.handed)
	}
}

// A token of Temporal's too long to hand out sealed within what porthole
// takes back (policy.MaxPageTokenLen) fails the page with a sentence that
// says what to do, not as a failure of porthole's; one just short of it
// is handed out.
func TestATokenTooLongToHandOutSealedSaysSo(t *testing.T) {
	t.Parallel()
	for size, fits := range map[int]bool{2526: true, 2527: false} {
		cs := connect(t, mustServer(t, &pagingReader{fakeReader: &fakeReader{}, tokenSize: size}))
		page, refused := historyPage(t, cs, "order-a", "")
		switch {
		case fits && (refused != "" || len(page.NextPageToken) > 4096):
			t.Errorf("a token of %d bytes: %q, sealed to %d characters", size, refused, len(page.NextPageToken))
		case !fits && !strings.Contains(refused, "longer than porthole can hand out sealed; read smaller pages"):
			t.Errorf("a token of %d bytes: %q; want the sentence", size, refused)
		}
	}
}
