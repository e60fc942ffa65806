package rpcdecode

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The strict decoder as it was written first, on encoding/json's token
// stream: the reference FuzzDecodeAgreesWithReference holds
// Decode to.

func decodeReference(body []byte) (Envelope, error) {
	var env Envelope
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return env, refuse(jsonrpc.CodeInvalidRequest, "the body is empty")
	}
	if trimmed[0] == '[' {
		return env, refuse(jsonrpc.CodeInvalidRequest, "batches are not accepted: send one request per HTTP request")
	}
	if trimmed[0] != '{' {
		return env, refuse(jsonrpc.CodeInvalidRequest, "the body must be one JSON-RPC request object")
	}
	if err := referenceStrictJSON(body); err != nil {
		return env, err
	}
	// One pass reads the members; keys are exact (referenceStrictJSON refused
	// case variants), so a member in another case is an unknown one.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return env, refuse(jsonrpc.CodeParseError, "the body is not JSON")
	}
	for k := range top {
		switch k {
		case "jsonrpc", "id", "method", "params":
		default:
			return env, refuse(jsonrpc.CodeInvalidRequest, "unknown member %q in a JSON-RPC request", clientText(k))
		}
	}
	var raw struct {
		JSONRPC string
		ID      json.RawMessage
		Method  *string
		Params  json.RawMessage
	}
	raw.ID, raw.Params = top["id"], top["params"]
	_ = json.Unmarshal(top["jsonrpc"], &raw.JSONRPC)
	if m, ok := top["method"]; ok {
		_ = json.Unmarshal(m, &raw.Method)
	}
	env.ID = raw.ID
	idOK := true
	if len(raw.ID) > 0 && raw.ID[0] != '"' && string(raw.ID) != "null" {
		// A number must be an integer that every JSON reader holds
		// exactly; anything else (true, an object) is refused too, and
		// never echoed.
		n, err := json.Number(raw.ID).Int64()
		if idOK = err == nil && n <= 1<<53-1 && n >= -(1<<53-1); !idOK {
			env.ID = nil
		}
	}
	switch {
	case raw.JSONRPC != "2.0":
		return env, refuse(jsonrpc.CodeInvalidRequest, `"jsonrpc" must be "2.0"`)
	case raw.Method == nil || *raw.Method == "":
		return env, refuse(jsonrpc.CodeInvalidRequest, `"method" must be a non-empty string (responses are not accepted)`)
	}
	if !idOK {
		return env, refuse(jsonrpc.CodeInvalidRequest, `"id" must be a string or an integer from -9007199254740991 to 9007199254740991`)
	}
	env.Method = *raw.Method
	if p := bytes.TrimSpace(raw.Params); len(p) > 0 && p[0] != '{' && string(p) != "null" {
		return env, refuse(jsonrpc.CodeInvalidRequest, `"params" must be an object`)
	}
	env.Params = raw.Params
	if env.Method == "tools/call" {
		// The go-sdk reads "name" spelled exactly so.
		var members map[string]json.RawMessage
		var name *string
		if json.Unmarshal(raw.Params, &members) != nil || json.Unmarshal(members["name"], &name) != nil || name == nil {
			return env, refuse(jsonrpc.CodeInvalidRequest, `tools/call needs "params" with a string "name"`)
		}
		env.Tool = *name
		// What a direct answer (the gateway's fast path, gateway/fastpath) reads: the arguments as sent,
		// and whether params hold "name" and at most "arguments".
		env.Plain = true
		for k := range members {
			env.Plain = env.Plain && (k == "name" || k == "arguments")
		}
		env.Arguments = members["arguments"]
	}
	return env, nil
}

// referenceStrictJSON walks body token by token: one value, no duplicate or
// case-variant keys in any object, nesting within MaxDepth, nothing
// after the value.
func referenceStrictJSON(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := referenceStrictValue(dec, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return refuse(jsonrpc.CodeInvalidRequest, "the body holds data after the request object")
	}
	return nil
}

func referenceStrictValue(dec *json.Decoder, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return refuse(jsonrpc.CodeParseError, "the body is not valid JSON")
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth >= MaxDepth {
		return refuse(jsonrpc.CodeInvalidRequest, "the body nests deeper than %d levels", MaxDepth)
	}
	keys := map[string]bool{}
	for dec.More() {
		if delim == '{' {
			kt, err := dec.Token()
			key, isKey := kt.(string)
			if err != nil || !isKey {
				return refuse(jsonrpc.CodeParseError, "the body is not valid JSON")
			}
			folded := foldKey(key)
			if keys[folded] {
				return refuse(jsonrpc.CodeInvalidRequest, "the key %q appears twice, or twice in different case", clientText(key))
			}
			keys[folded] = true
		}
		if err := referenceStrictValue(dec, depth+1); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return refuse(jsonrpc.CodeParseError, "the body is not valid JSON")
	}
	return nil
}

// FuzzDecodeAgreesWithReference: the one-pass decoder accepts what
// the reference accepts and refuses what it refuses, with the same JSON-RPC
// code, and reads the same id, method, tool, arguments, and plainness of a
// call (what the gateway's fast path relies on). Where a body is refused
// for several reasons the two may name different ones; where the reference
// names an unknown member it picks one at random.
func FuzzDecodeAgreesWithReference(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got, gerr := Decode([]byte(body))
		want, werr := decodeReference([]byte(body))
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: Decode says %v, the reference %v", body, gerr, werr)
		}
		if gerr != nil {
			g, w := gerr.(*Error), werr.(*Error)
			if g.Code != w.Code {
				t.Fatalf("%q: code %d (%s), the reference %d (%s)", body, g.Code, g.Message, w.Code, w.Message)
			}
			if !strings.HasPrefix(w.Message, "unknown member") && g.Message != w.Message {
				t.Fatalf("%q: %q, the reference %q", body, g.Message, w.Message)
			}
		}
		if string(got.ID) != string(want.ID) || got.Method != want.Method || got.Tool != want.Tool ||
			got.Plain != want.Plain || string(got.Arguments) != string(want.Arguments) || (got.Arguments == nil) != (want.Arguments == nil) ||
			string(got.Params) != string(want.Params) {
			t.Fatalf("%q: read %+v, the reference %+v", body, got, want)
		}
	})
}
