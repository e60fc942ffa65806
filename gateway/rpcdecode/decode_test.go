package rpcdecode

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecode: the strict decoder never panics, and what it accepts
// is one JSON object whose keys are unique under case folding at every
// level, with a method, so that the MCP server reads exactly what porthole
// checked.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		env, err := Decode([]byte(body))
		if err != nil {
			if _, ok := err.(*Error); !ok {
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

var decodeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","NAME":"b"}}`,
	`[{"jsonrpc":"2.0"}]`, `{"jsonrpc":"2.0","id":1,"method":"x"} {}`, `{"a":{"b":{"c":[1,{"d":2,"D":3}]}}}`,
	`{"jsonrpc":"2\u002e0","id":"a\"b","method":"tools\/call","params":{"N\u0041ME":"describe_workflow","arguments":{"\u212aey":1,"x":[true,false,null,-0.5e+3]}}}`,
	`{"jsonrpc":"2.0","id":-1,"method":"tools/call","params":{"arguments":{"k":1,"\u212a":2}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\ud83d\ude00\udc00\xff"}}`,
	`{"jsonrpc":"2.0","id":{},"method":"m"}`, `{"jsonrpc":"2.0","method":"m","params":[1]}`, `{"jsonrpc":"2.0","method":""}`,
	`{"jsonrpc":"2.0","method":null}`, `{"jsonrpc":2,"method":"m"}`, `{"jsonrpc":"2.0","method":"m","extra":1}`,
	`{"jsonrpc":"2.0","method":"m","params":null}`, `{"jsonrpc":"2.0","method":"tools/call","params":null}`,
	`{"a":01}`, `{"a":1.}`, `{"a":1e}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":tru}`, `{"a":[1,]}`, `{"a":1,}`, `{"a" 1}`, "{\"a\":\"\x01\"}",
	` {"jsonrpc":"2.0","method":"m"} ` + "\n", "\u00a0{}", `{"a":1}}`, `{"a":{"b":1,"B":2}}`,
	strings.Repeat(`{"a":`, 33) + "1" + strings.Repeat("}", 33), strings.Repeat(`[`, 40),
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1},"_meta":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"a","\u0061rguments":{ "x" : [ 1 ] }}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"a","Arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":null}}`,
	`{"k00":0,"k01":0,"k02":0,"k03":0,"k04":0,"k05":0,"k06":0,"k07":0,"k08":0,"k09":0,"k10":0,"k11":0,"k12":0,"k13":0,"k14":0,"k15":0,"k16":0,"K03":0}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"m"}`, `{"jsonrpc":"2.0","id":1e3,"method":"m"}`, `{"jsonrpc":"2.0","id":9007199254740992,"method":"m"}`,
	`{"jsonrpc":"2.0","id":-9007199254740991,"method":"m"}`, `{"jsonrpc":"2.0","id":-0,"method":"m"}`, `{"jsonrpc":"2.0","id":true,"method":"m"}`,
}

// An id is a string, null, or an integer every JSON reader holds exactly:
// the go-sdk reads 1.5 as 1, and a number past 2^53 as another, so the
// answer would go out under an id the client never sent. A refused id is
// not echoed.
func TestAnIDThatIsNoSafeIntegerIsRefused(t *testing.T) {
	t.Parallel()
	for id, ok := range map[string]bool{
		`1`: true, `-1`: true, `0`: true, `-0`: true, `9007199254740991`: true, `-9007199254740991`: true, `"1.5"`: true, `null`: true,
		`1.5`: false, `1.0`: false, `1e3`: false, `1E3`: false, `9007199254740992`: false, `-9007199254740992`: false,
		`12345678901234567890`: false, `true`: false, `[1]`: false, `{}`: false,
	} {
		// Refused for something else first, an id is not echoed either.
		if env, err := Decode([]byte(`{"jsonrpc":"1.0","id":` + id + `,"method":"m"}`)); err == nil || (!ok && env.ID != nil) {
			t.Errorf("id %s with a wrong jsonrpc: %v, read as %q; want a refusal that does not echo it", id, err, env.ID)
		}
		env, err := Decode([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`))
		switch {
		case ok && (err != nil || string(env.ID) != id):
			t.Errorf("id %s: %v, read as %s", id, err, env.ID)
		case !ok && (err == nil || !strings.Contains(err.Error(), "an integer from -9007199254740991") || env.ID != nil):
			t.Errorf("id %s: %v, read as %q; want a refusal that does not echo it", id, err, env.ID)
		}
	}
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

// TestARefusalQuotesAtMostMaxQuotedKeyOfAKey: a 1 MB unknown key once made a
// 6 MB audit line; the refusal quotes the key cut at MaxQuotedKey.
func TestARefusalQuotesAtMostMaxQuotedKeyOfAKey(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("k", 1<<20)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","` + key + `":1}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"` + key + `":1,"` + key + `":2}}`,
	} {
		_, err := Decode([]byte(body))
		if err == nil || len(err.Error()) > MaxQuotedKey+100 {
			t.Fatalf("a refusal of a body with a 1 MiB key is %d bytes", len(err.Error()))
		}
	}
}
