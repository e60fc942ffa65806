package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// describeBody is a tools/call of describe_workflow for workflowID.
func describeBody(workflowID string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"` + workflowID + `"}}}`
}

// describeBody2026 is describeBody as a 2026-07-28 client sends it: with
// the per-request _meta that replaces the session.
func describeBody2026(workflowID string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"` + workflowID + `"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"porthole-bench","version":"1"}}}}`
}

// httpCall posts body to url with hc, with token as the bearer when set,
// and fails unless the answer is a result that is not a tool error.
func httpCall(hc *http.Client, url, body, token string) func(context.Context) error {
	return httpCallWith(hc, url, body, token, nil)
}

// httpCallWith is httpCall with more headers.
func httpCallWith(hc *http.Client, url, body, token string, header http.Header) func(context.Context) error {
	return func(ctx context.Context) error {
		status, b, err := post(ctx, hc, url, body, token, header)
		if err != nil {
			return err
		}
		if status != 200 || bytes.Contains(b, []byte(`"isError":true`)) || !bytes.Contains(b, []byte(`"result"`)) {
			return fmt.Errorf("status %d: %.200s", status, b)
		}
		return nil
	}
}

// post posts body to url as an MCP client posts a JSON-RPC request, with
// token as the bearer when set and header's fields, and returns the
// answer's status and body.
func post(ctx context.Context, hc *http.Client, url, body, token string, header http.Header) (int, []byte, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
