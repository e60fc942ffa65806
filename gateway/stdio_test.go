package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// Over stdio, as over HTTP, a request whose id is not a string, null or
// a safe integer is refused with id null, never answered under another
// id (the go-sdk reads 1.5 as 1); the requests around it are answered.
func TestOverStdioAnIDThatIsNoSafeIntegerIsRefused(t *testing.T) {
	t.Parallel()
	g := mustServer(t, &fakeReader{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = g.ServeStdio(ctx, inR, outW) }()
	lines := bufio.NewScanner(outR)
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]any {
		t.Helper()
		got := make(chan map[string]any, 1)
		go func() {
			var m map[string]any
			if lines.Scan() {
				_ = json.Unmarshal(lines.Bytes(), &m)
			}
			got <- m
		}()
		select {
		case m := <-got:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no answer within 10 s")
			return nil
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := next(); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, id := range []string{`1.5`, `9007199254740993`, `1e3`} {
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{}}`)
		m := next()
		e, _ := m["error"].(map[string]any)
		if got, present := m["id"]; !present || got != nil || e == nil || !strings.Contains(e["message"].(string), "an integer from -9007199254740991") {
			t.Fatalf("a request with id %s: %v; want a refusal with id null", id, m)
		}
	}
	send(`{"jsonrpc":"2.0","id":"after","method":"tools/list","params":{}}`)
	if m := next(); m["id"] != "after" || m["result"] == nil {
		t.Fatalf("the request after the refusals: %v", m)
	}
}
