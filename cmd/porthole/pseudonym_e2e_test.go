package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"

	"github.com/porthole-dev/porthole/gateway/pseudonym"
	"github.com/porthole-dev/porthole/temporal/read"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// pseudonymPolicy gives "vendor" a profile that shows workflow ids, run
// ids, task queues and worker identities as pseudonyms, and keeps free
// text.
const pseudonymPolicy = `{
  "principals": {"vendor": {"tools": ["*"], "profile": "ids"}},
  "profiles": {"ids": {"classes": {"workflow-id": "pseudonymise", "run-id": "pseudonymise", "task-queue": "pseudonymise", "worker-identity": "pseudonymise"}}}
}`

// call is the structured answer of one tool call, or its error text.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (answer string, isError bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		return res.Content[0].(*mcp.TextContent).Text, true
	}
	b, _ := json.Marshal(res.StructuredContent)
	return string(b), false
}

// TestAnAgentFollowsAWorkflowByPseudonymAcrossReplicasAndARestart: a
// workflow whose id holds a customer's e-mail address is listed by a
// principal whose profile pseudonymises ids, through one porthole; a
// second porthole with the same secret key describes it, reads its history
// and finds it by a query on the pseudonym; a restarted porthole shows the
// same pseudonym. The real id, a pseudonym of another profile's key and
// one of another deployment's key are refused. No form of the address
// reaches the agent, in an answer or a page token; the audit trail names
// the real id.
func TestAnAgentFollowsAWorkflowByPseudonymAcrossReplicasAndARestart(t *testing.T) {
	t.Parallel()
	suffix := make([]byte, 4)
	rand.Read(suffix)
	queue := "porthole-pseudonyms-" + hex.EncodeToString(suffix)
	// An address of its own, not the seed's, which other tests' profiles
	// keep in the workflow ids they list.
	const email = "pat.pseudonym@example.org"
	realID := "order-" + email + "-" + hex.EncodeToString(suffix)
	c := devServer(t).Client()
	if _, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: realID, TaskQueue: queue}, "PortholePseudonymWorkflow"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	policyFile, secretFile := filepath.Join(dir, "policy.json"), filepath.Join(dir, "secret")
	secret := make([]byte, pseudonym.SecretSize)
	rand.Read(secret)
	os.WriteFile(policyFile, []byte(pseudonymPolicy), 0o600)
	os.WriteFile(secretFile, []byte(hex.EncodeToString(secret)), 0o600)
	tokensFile, _ := newToken(t, "e2e-agent")
	vendor := newTokenIn(t, tokensFile, "vendor")
	start := func() (string, string, *process) {
		env, auditLog, _ := auditEnv(t)
		env = append(env, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+tokensFile, "PORTHOLE_POLICY_FILE="+policyFile, "PORTHOLE_SECRET_KEY_FILE="+secretFile)
		p, line := startPorthole(t, temporalEnv(t, env...), "serving MCP", "serve")
		return line["endpoint"].(string), auditLog, p
	}
	endpointA, _, pa := start()
	endpointB, auditB, pb := start()
	wireA, wireB := &recordingTransport{token: vendor}, &recordingTransport{token: vendor}
	a, b := connectHTTP(t, endpointA, wireA), connectHTTP(t, endpointB, wireB)

	var list read.WorkflowList
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("the last list: %s", last)
		}
	}()
	temporaltest.Eventually(t, 30*time.Second, "the workflow listed", func() bool {
		ans, isErr := call(t, a, "list_workflows", map[string]any{"query": "WorkflowType = 'PortholePseudonymWorkflow'"})
		last = ans
		list = read.WorkflowList{}
		json.Unmarshal([]byte(ans), &list)
		return !isErr && len(list.Workflows) > 0 && strings.Contains(ans, `"pseudonymised":["workflow-id","run-id","task-queue"]`)
	})
	mk, _ := pseudonym.New(secret, nil, time.Time{})
	pn := mk.Make("ids", "workflow-id", devServer(t).Namespace, realID)
	if !strings.Contains(mustJSON(list), `"workflowId":"`+pn+`"`) {
		t.Fatalf("the list does not show the workflow's pseudonym %s: %s", pn, mustJSON(list))
	}

	if ans, isErr := call(t, b, "describe_workflow", map[string]any{"workflowId": pn}); isErr || !strings.Contains(ans, `"workflowId":"`+pn+`"`) {
		t.Errorf("the other replica's describe by pseudonym: %s", ans)
	}
	if ans, isErr := call(t, b, "get_workflow_history", map[string]any{"workflowId": pn}); isErr || !strings.Contains(ans, "WorkflowExecutionStarted") {
		t.Errorf("the other replica's history by pseudonym: %s", ans)
	}
	// A page token handed to the agent carries no real id (the wire is
	// searched below), and the next page opens by pseudonym.
	var page read.History
	ans, isErr := call(t, b, "get_workflow_history", map[string]any{"workflowId": pn, "pageSize": 1})
	json.Unmarshal([]byte(ans), &page)
	if isErr || page.NextPageToken == "" {
		t.Fatalf("a page of one event: %s", ans)
	}
	if ans, isErr := call(t, b, "get_workflow_history", map[string]any{"workflowId": pn, "pageSize": 1, "nextPageToken": page.NextPageToken}); isErr {
		t.Errorf("the next page: %s", ans)
	}
	if ans, isErr := call(t, b, "list_workflows", map[string]any{"query": "WorkflowId = '" + pn + "'"}); isErr || strings.Count(ans, `"workflowId"`) != 1 {
		t.Errorf("a query by pseudonym: %s", ans)
	}
	other, _ := pseudonym.New(bytes.Repeat([]byte{7}, pseudonym.SecretSize), nil, time.Time{})
	for name, id := range map[string]string{
		"the real id":                       realID,
		"another profile's pseudonym":       mk.Make("other", "workflow-id", devServer(t).Namespace, realID),
		"another deployment's pseudonym":    other.Make("ids", "workflow-id", devServer(t).Namespace, realID),
		"the task queue's pseudonym as one": mk.Make("ids", "task-queue", devServer(t).Namespace, realID),
	} {
		if ans, isErr := call(t, b, "describe_workflow", map[string]any{"workflowId": id}); !isErr || !strings.Contains(ans, "must be a pseudonym porthole gave you") {
			t.Errorf("%s: %s", name, ans)
		}
	}
	for _, q := range []string{"WorkflowId = '" + realID + "'", "WorkflowId STARTS_WITH 'order-'", "TaskQueue = '" + queue + "'", "WorkflowType = 'x' ORDER BY WorkflowId"} {
		if ans, isErr := call(t, b, "count_workflows", map[string]any{"query": q}); !isErr {
			t.Errorf("the query %s: %s", q, ans)
		}
	}

	pa.stop(t)
	endpointA2, _, _ := start()
	a2w := &recordingTransport{token: vendor}
	if ans, isErr := call(t, connectHTTP(t, endpointA2, a2w), "describe_workflow", map[string]any{"workflowId": pn}); isErr || !strings.Contains(ans, `"workflowId":"`+pn+`"`) {
		t.Errorf("after a restart: %s", ans)
	}
	for _, w := range [][]byte{wireA.bytes(), wireB.bytes(), a2w.bytes()} {
		assertNoneOf(t, "the agent's wire", w, email, realID, queue)
	}
	pb.stop(t)
	logged, _ := os.ReadFile(auditB)
	if !regexp.MustCompile(`"kind":"result"[^\n]*"profile":"\\"ids\\""[^\n]*"opened":\[\{"name":"\\"workflowId\\"","value":"\\"` + regexp.QuoteMeta(realID) + `\\""`).Match(logged) {
		t.Errorf("no result record names the real id its pseudonym stood for:\n%s", logged)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
