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

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/limit"
	"github.com/porthole-dev/porthole/gateway/rpcdecode"
)

type envelopeKey struct{}

func envelopeFrom(r *http.Request) (rpcdecode.Envelope, bool) {
	e, ok := r.Context().Value(envelopeKey{}).(rpcdecode.Envelope)
	return e, ok
}

// strictDecode admits exactly one JSON-RPC request per body, and decides on
// the same bytes the MCP server will read. JSON decoders disagree on a key
// given twice (most take the last) and on keys in another case (Go's
// encoding/json, which porthole's handlers decode arguments with, matches
// them; the go-sdk's decoder does not), so {"name":"describe_workflow",
// "NAME":"x"} could mean one thing to a check and another to the server.
// Refusing duplicate and case-variant keys at every level makes the body
// mean one thing only; and the tool is read from "name" spelled exactly so,
// as the go-sdk reads it.
// Batches are refused (each call must pass the rate limiter and the audit
// log on its own), as are trailing data, a wrong Content-Type, and bodies
// over the cap (413: the cap bounds the memory one request can hold).
//
// Security: a refused body is charged one unit of the principal's bucket,
// as any request; past it the answer is 429. A principal sending nothing but
// bad bodies was otherwise refused without limit, each refusal a record.
func (g *Server) strictDecode(maxBytes int64, limits limit.Limiter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			span := g.link(r.Context(), "porthole decode")
			defer span.End()
			env, body, refused := g.decodeBody(w, r, maxBytes)
			if refused != nil {
				g.refuseBody(w, r, limits, refused)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			span.End()
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), envelopeKey{}, env)))
		})
	}
}

// bodyRefusal is why a body is refused: its status and JSON-RPC error for
// the client, and the reason for the audit log.
type bodyRefusal struct {
	status  int
	id      json.RawMessage
	code    int
	message string
	reason  string
}

// decodeBody reads r's body, within maxBytes, and decodes it strictly;
// or says why it is refused.
func (g *Server) decodeBody(w http.ResponseWriter, r *http.Request, maxBytes int64) (rpcdecode.Envelope, []byte, *bodyRefusal) {
	var env rpcdecode.Envelope
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return env, nil, &bodyRefusal{http.StatusUnsupportedMediaType, nil, jsonrpc.CodeInvalidRequest, "Content-Type must be application/json", "Content-Type is not application/json"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return env, nil, &bodyRefusal{http.StatusRequestEntityTooLarge, nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("the body is larger than %d bytes", maxBytes), "body over the size cap"}
	}
	if err != nil {
		return env, nil, &bodyRefusal{http.StatusBadRequest, nil, jsonrpc.CodeParseError, "the body could not be read", "body could not be read"}
	}
	env, err = rpcdecode.Decode(body)
	if err != nil {
		var d *rpcdecode.Error
		if !errors.As(err, &d) {
			// Decode refuses only with an *rpcdecode.Error; anything
			// else is a bug, answered as a parse error.
			d = &rpcdecode.Error{Code: jsonrpc.CodeParseError, Message: "the body could not be decoded"}
		}
		msg := d.QuotingKeyWith(g.quotedKey)
		return env, nil, &bodyRefusal{http.StatusBadRequest, env.ID, d.Code, msg, "invalid JSON-RPC: " + msg}
	}
	// From 2026-07-28 the method and the tool are in headers too; a
	// request whose headers and body disagree is refused here, before the
	// rate limiter and the audit log act on the body's reading
	// (rpcdecode.CheckHeaders says why).
	if err := rpcdecode.CheckHeaders(r.Header, env, body); err != nil {
		var d *rpcdecode.Error
		errors.As(err, &d)
		return env, nil, &bodyRefusal{http.StatusBadRequest, env.ID, d.Code, d.Message, "standard headers disagree with the body: " + d.Message}
	}
	return env, body, nil
}

// refuseBody answers a refused body, charged one unit of its principal's
// rate limit as any request is (429 past it, 503 when the limits cannot
// be asked), and audited.
func (g *Server) refuseBody(w http.ResponseWriter, r *http.Request, limits limit.Limiter, b *bodyRefusal) {
	ref, err := limits.Charge(r.Context(), authenticatedPrincipal(r), 1, false)
	if err != nil {
		g.limitsUnavailable(w, r, b.id, err)
		return
	}
	if ref != nil {
		g.tooManyRequests(w, r, ref.Limit, ref.After, b.id, "the "+ref.Limit+" rate limit")
		return
	}
	g.denied(r, audit.OutcomeInvalid, b.status, b.reason)
	writeRPCError(w, b.status, b.id, b.code, b.message)
}

// quotedKey is a key of a refused body as a refusal quotes it: redacted,
// then cut at rpcdecode.MaxQuotedKey bytes, with "…" where it was cut.
func (g *Server) quotedKey(key string) string {
	out, _, cut := g.redactor.Cut(key, rpcdecode.MaxQuotedKey)
	if cut {
		out += "…"
	}
	return out
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
