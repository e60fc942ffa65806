package fastpath

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/redact"
	"github.com/porthole-dev/porthole/temporal/read"
)

// toolResultCases are results marshalToolResult writes itself and results
// it hands to the go-sdk, with the text and structured content it meets.
func toolResultCases(text string, structured []byte) []*mcp.CallToolResult {
	raw := json.RawMessage(structured)
	one := func() []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: text}} }
	return []*mcp.CallToolResult{
		{Content: one(), StructuredContent: raw},
		{Content: one(), StructuredContent: raw, IsError: true},
		{Content: one()},
		{Content: []mcp.Content{}, StructuredContent: raw},
		{Content: append(one(), &mcp.TextContent{Text: "more"}), StructuredContent: raw},
		{Content: one(), StructuredContent: map[string]any{"a": text}},
		{Content: one(), StructuredContent: raw, Meta: mcp.Meta{"io.modelcontextprotocol/serverName": "porthole"}},
		{Content: []mcp.Content{&mcp.TextContent{Text: text, Meta: mcp.Meta{"k": "v"}}}, StructuredContent: raw},
		{Content: []mcp.Content{&mcp.TextContent{Text: text, Annotations: &mcp.Annotations{Priority: 1}}}, StructuredContent: raw},
		{Content: []mcp.Content{&mcp.ImageContent{Data: []byte(text), MIMEType: "image/png"}}, StructuredContent: raw},
		{Content: []mcp.Content{(*mcp.TextContent)(nil)}, StructuredContent: raw},
		{Content: one(), StructuredContent: json.RawMessage(nil)},
	}
}

// rendered is a structured answer as porthole renders it: json.Marshal,
// then the redactor.
func rendered(t testing.TB, v any, secrets ...string) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	red, _ := redact.New(secrets...)
	b, _ = red.JSON(b)
	return b
}

// recovered is marshal's answer, or its panic as an error: the go-sdk's
// MarshalJSON panics on a nil text block, and the direct path must do
// what it does.
func recovered(marshal func() ([]byte, error)) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return marshal()
}

// TestMarshalToolResultIsTheGoSDKs: the result written directly is the
// go-sdk's bytes, for porthole's answers and for every other shape (which
// it hands to the go-sdk).
func TestMarshalToolResultIsTheGoSDKs(t *testing.T) {
	t.Parallel()
	hostile := "<script>&amp;\u2028\u2029\u202e\"\\\x00\x1f\xff\xfe é 😀 eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl AKIAIOSFODNN7EXAMPLE"
	for _, structured := range [][]byte{
		rendered(t, map[string]any{"events": []string{hostile, "plain"}, "n": 3}),
		rendered(t, map[string]any{"s": "a secret-value-here in it"}, "secret-value-here"),
		[]byte(`{"a":"<b>"}`), // an HTML character the redactor might write
		[]byte(`{"a":"` + "\u2028" + `"}`),
		[]byte(`{}`),
		// Not what porthole renders; handed to the go-sdk all the same.
		[]byte(`{ "a" : 1 }`),
		[]byte(`{"a":` + "\n" + `"b\"}"}`),
		[]byte(`[1,2]`),
		[]byte(`{"a":`),
		[]byte(`"a"`),
		[]byte(``),
	} {
		for _, text := range []string{string(structured), hostile, ""} {
			for i, r := range toolResultCases(text, structured) {
				want, werr := recovered(r.MarshalJSON)
				got, gerr := recovered(func() ([]byte, error) { return marshalToolResult(r) })
				if !bytes.Equal(got, want) || (werr == nil) != (gerr == nil) {
					t.Errorf("case %d, structured %q, text %q:\n got %s (%v)\nwant %s (%v)", i, structured, text, got, gerr, want, werr)
				}
			}
		}
	}
}

// FuzzMarshalToolResultIsTheGoSDKs: for any string in porthole's rendered
// answer and any text, the bytes are the go-sdk's.
func FuzzMarshalToolResultIsTheGoSDKs(f *testing.F) {
	f.Add("plain", "<&>\u2028", false)
	f.Add("\xff\u202e\"", "", true)
	f.Fuzz(func(t *testing.T, value, text string, isError bool) {
		structured := rendered(t, map[string]any{"value": value, "list": []string{value, text}}, "hunter2-secret")
		for _, r := range toolResultCases(text, structured) {
			r.IsError = isError
			want, werr := recovered(r.MarshalJSON)
			got, gerr := recovered(func() ([]byte, error) { return marshalToolResult(r) })
			if !bytes.Equal(got, want) || (werr == nil) != (gerr == nil) {
				t.Fatalf("got %s (%v)\nwant %s (%v)", got, gerr, want, werr)
			}
		}
	})
}

// BenchmarkAnswerOfAHistoryPage: a page of 500 history events answered,
// written by marshalToolResult beside the go-sdk's MarshalJSON (#26).
func BenchmarkAnswerOfAHistoryPage(b *testing.B) {
	h := &read.History{WorkflowID: "order-123", Events: make([]read.HistoryEvent, 500)}
	for i := range h.Events {
		h.Events[i] = read.HistoryEvent{EventID: int64(i + 1), EventType: "ActivityTaskScheduled", EventTime: time.Unix(1764547200, 0).UTC(),
			ActivityID: fmt.Sprint(i), ActivityType: "ChargeCard", ScheduledEventID: int64(i), Attempt: 1}
	}
	structured := rendered(b, h)
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(structured)}}, StructuredContent: json.RawMessage(structured)}
	for _, c := range []struct {
		name    string
		marshal func() ([]byte, error)
	}{{"go-sdk", r.MarshalJSON}, {"direct", func() ([]byte, error) { return marshalToolResult(r) }}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(structured)))
			for b.Loop() {
				if _, err := c.marshal(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
