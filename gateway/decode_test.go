package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeEnvelope: the strict decoder never panics, and what it accepts
// is one JSON object whose keys are unique under case folding at every
// level, with a method, so that the MCP server reads exactly what porthole
// checked.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range []string{
		callBody("describe_namespace"), listToolsBody,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","NAME":"b"}}`,
		`[{"jsonrpc":"2.0"}]`, `{"jsonrpc":"2.0","id":1,"method":"x"} {}`, `{"a":{"b":{"c":[1,{"d":2,"D":3}]}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		env, err := decodeEnvelope([]byte(body))
		if err != nil {
			if _, ok := err.(*errDecode); !ok {
				t.Fatalf("a refusal that is not a JSON-RPC error: %v", err)
			}
			return
		}
		var top map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &top) != nil {
			t.Fatalf("accepted a body that is not one JSON object: %q", body)
		}
		if env.Method == "" {
			t.Fatalf("accepted a request without a method: %q", body)
		}
		if env.Method == "tools/call" {
			var p struct{ Params struct{ Name string } }
			json.Unmarshal([]byte(body), &p)
			if p.Params.Name != env.Tool {
				t.Fatalf("the decoder read tool %q, encoding/json reads %q", env.Tool, p.Params.Name)
			}
		}
		checkUniqueKeys(t, []byte(body))
	})
}

// checkUniqueKeys decodes every object of body with encoding/json and fails
// if two keys fold to the same string.
func checkUniqueKeys(t *testing.T, body []byte) {
	t.Helper()
	var walk func(raw json.RawMessage)
	walk = func(raw json.RawMessage) {
		raw = json.RawMessage(strings.TrimSpace(string(raw)))
		if len(raw) == 0 {
			return
		}
		switch raw[0] {
		case '{':
			dec := json.NewDecoder(strings.NewReader(string(raw)))
			dec.Token()
			seen := map[string]bool{}
			for dec.More() {
				k, _ := dec.Token()
				key := foldKey(k.(string))
				if seen[key] {
					t.Fatalf("accepted duplicate keys %q in %s", k, raw)
				}
				seen[key] = true
				var v json.RawMessage
				dec.Decode(&v)
				walk(v)
			}
		case '[':
			var items []json.RawMessage
			json.Unmarshal(raw, &items)
			for _, it := range items {
				walk(it)
			}
		}
	}
	walk(body)
}
