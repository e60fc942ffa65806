package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode"

	"github.com/porthole-dev/porthole/audit"
)

// maxJSONDepth bounds nesting in a request body. MCP requests are shallow;
// deep nesting only costs the decoder.
const maxJSONDepth = 32

// envelope is what strict decoding learned of a JSON-RPC request.
type envelope struct {
	ID     json.RawMessage
	Method string
	Tool   string // for tools/call
}

type envelopeKey struct{}

func envelopeFrom(r *http.Request) (envelope, bool) {
	e, ok := r.Context().Value(envelopeKey{}).(envelope)
	return e, ok
}

// errDecode is a refusal of a body, with the JSON-RPC code to answer with.
type errDecode struct {
	code    int
	message string
}

func (e *errDecode) Error() string { return e.message }

func refuseBody(code int, format string, args ...any) error {
	return &errDecode{code: code, message: fmt.Sprintf(format, args...)}
}

// JSON-RPC error codes porthole answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// strictDecode admits exactly one JSON-RPC request per body, and decides on
// the same bytes the MCP server will read. Go's encoding/json, which the
// go-sdk decodes with, takes the last of two duplicate keys and matches keys
// without regard to case, so {"name":"describe_workflow","NAME":"x"} could
// mean one thing to a check and another to the server. Refusing duplicate
// and case-variant keys at every level makes the body mean one thing only.
// Batches are refused (each call must pass the rate limiter and the audit
// log on its own), as are trailing data, a wrong Content-Type, and bodies
// over the cap (413: the cap bounds the memory one request can hold).
func (g *Server) strictDecode(maxBytes int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				g.denied(r, audit.OutcomeInvalid, http.StatusUnsupportedMediaType, "Content-Type is not application/json")
				writeRPCError(w, http.StatusUnsupportedMediaType, nil, codeInvalidRequest, "Content-Type must be application/json")
				return
			}
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				g.denied(r, audit.OutcomeInvalid, http.StatusRequestEntityTooLarge, "body over the size cap")
				writeRPCError(w, http.StatusRequestEntityTooLarge, nil, codeInvalidRequest, fmt.Sprintf("the body is larger than %d bytes", maxBytes))
				return
			}
			if err != nil {
				g.denied(r, audit.OutcomeInvalid, http.StatusBadRequest, "body could not be read")
				writeRPCError(w, http.StatusBadRequest, nil, codeParseError, "the body could not be read")
				return
			}
			env, err := decodeEnvelope(body)
			if err != nil {
				var d *errDecode
				errors.As(err, &d)
				g.denied(r, audit.OutcomeInvalid, http.StatusBadRequest, "invalid JSON-RPC: "+d.message)
				writeRPCError(w, http.StatusBadRequest, env.ID, d.code, d.message)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), envelopeKey{}, env)))
		})
	}
}

// decodeEnvelope validates body and reads its envelope. The returned
// envelope carries the id when one could be read, for the error answer.
func decodeEnvelope(body []byte) (envelope, error) {
	var env envelope
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return env, refuseBody(codeInvalidRequest, "the body is empty")
	}
	if trimmed[0] == '[' {
		return env, refuseBody(codeInvalidRequest, "batches are not accepted: send one request per HTTP request")
	}
	if trimmed[0] != '{' {
		return env, refuseBody(codeInvalidRequest, "the body must be one JSON-RPC request object")
	}
	if err := checkStrictJSON(body); err != nil {
		return env, err
	}
	// One pass reads the members; keys are exact (checkStrictJSON refused
	// case variants), so a member in another case is an unknown one.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return env, refuseBody(codeParseError, "the body is not JSON")
	}
	for k := range top {
		switch k {
		case "jsonrpc", "id", "method", "params":
		default:
			return env, refuseBody(codeInvalidRequest, "unknown member %q in a JSON-RPC request", k)
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
	switch {
	case raw.JSONRPC != "2.0":
		return env, refuseBody(codeInvalidRequest, `"jsonrpc" must be "2.0"`)
	case raw.Method == nil || *raw.Method == "":
		return env, refuseBody(codeInvalidRequest, `"method" must be a non-empty string (responses are not accepted)`)
	}
	if len(raw.ID) > 0 && raw.ID[0] != '"' && (raw.ID[0] < '0' || raw.ID[0] > '9') && raw.ID[0] != '-' && string(raw.ID) != "null" {
		return env, refuseBody(codeInvalidRequest, `"id" must be a string or a number`)
	}
	env.Method = *raw.Method
	if p := bytes.TrimSpace(raw.Params); len(p) > 0 && p[0] != '{' && string(p) != "null" {
		return env, refuseBody(codeInvalidRequest, `"params" must be an object`)
	}
	if env.Method == "tools/call" {
		var params struct {
			Name *string `json:"name"`
		}
		if err := json.Unmarshal(raw.Params, &params); err != nil || params.Name == nil {
			return env, refuseBody(codeInvalidRequest, `tools/call needs "params" with a string "name"`)
		}
		env.Tool = *params.Name
	}
	return env, nil
}

// checkStrictJSON walks body token by token: one value, no duplicate or
// case-variant keys in any object, nesting within maxJSONDepth, nothing
// after the value.
func checkStrictJSON(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := strictValue(dec, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return refuseBody(codeInvalidRequest, "the body holds data after the request object")
	}
	return nil
}

func strictValue(dec *json.Decoder, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return refuseBody(codeParseError, "the body is not valid JSON")
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth >= maxJSONDepth {
		return refuseBody(codeInvalidRequest, "the body nests deeper than %d levels", maxJSONDepth)
	}
	keys := map[string]bool{}
	for dec.More() {
		if delim == '{' {
			kt, err := dec.Token()
			key, isKey := kt.(string)
			if err != nil || !isKey {
				return refuseBody(codeParseError, "the body is not valid JSON")
			}
			folded := foldKey(key)
			if keys[folded] {
				return refuseBody(codeInvalidRequest, "the key %q appears twice, or twice in different case", key)
			}
			keys[folded] = true
		}
		if err := strictValue(dec, depth+1); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return refuseBody(codeParseError, "the body is not valid JSON")
	}
	return nil
}

// foldKey maps every rune of key to the smallest rune of its Unicode
// simple-folding orbit, so keys that Go's JSON decoding would match to the
// same field (K, k and the Kelvin sign among them) fold to one string.
func foldKey(key string) string {
	var b strings.Builder
	for _, r := range key {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// writeRPCError answers with a JSON-RPC error object and an HTTP status.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": message},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
