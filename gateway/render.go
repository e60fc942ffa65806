package gateway

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/gateway/fastpath"
	"github.com/porthole-dev/porthole/temporal/read"
)

// renderedAnswer is a tool result as JSON, redacted, without its age.
type renderedAnswer struct {
	json       []byte
	redactions int
}

// render marshals a tool result and redacts it, counting the redactions.
//
// An answer from the cache is the same value for every call its entry
// answers but for its age, so it is marshalled and redacted once per entry:
// by the read that filled the entry (whose answer has no age), or by the
// first hit, and later hits take the redacted JSON and write their own
// ageSeconds into it. The age is a number porthole computes, which no
// redaction could concern; the wire redactor still reads every byte where
// the answer leaves. BenchmarkWholeChainCached measures what this saves;
// docs/performance.md gives the figure.
func (g *Server) render(entry *cacheEntry, out any) ([]byte, int, error) {
	o, _ := out.(interface{ Observed() *read.Observation })
	if entry == nil || o == nil {
		return g.marshalRedacted(out)
	}
	obs := o.Observed()
	age := obs.AgeSeconds
	r := entry.rendered.Load()
	if r == nil {
		var b []byte
		var n int
		var err error
		if age == nil {
			// The read that filled the entry: its answer, shared by the
			// calls that waited on the same read, has no age to lift.
			b, n, err = g.marshalRedacted(out)
		} else {
			// out is this hit's own copy of the entry's value (cachedRead
			// copies it to set the age), so its age can be lifted for a
			// moment.
			obs.AgeSeconds = nil
			b, n, err = g.marshalRedacted(out)
			obs.AgeSeconds = age
		}
		if err != nil {
			return nil, 0, err
		}
		if len(b) > maxRenderedBytes {
			if age == nil {
				return b, n, nil
			}
			return g.withAgeOr(b, n, out, *age)
		}
		r = &renderedAnswer{json: b, redactions: n}
		entry.rendered.Store(r)
	}
	if age == nil {
		return r.json, r.redactions, nil
	}
	return g.withAgeOr(r.json, r.redactions, out, *age)
}

// maxRenderedBytes bounds what a cache entry keeps of its rendering, so
// that the cache's memory grows by at most maxCacheEntries times this: a
// larger answer (a long history page) is rendered again for each hit.
const maxRenderedBytes = 16 << 10

// withAgeOr is the rendering b of out's value with age written in, or,
// for JSON of another shape, out marshalled and redacted anew.
func (g *Server) withAgeOr(b []byte, redactions int, out any, age float64) ([]byte, int, error) {
	if aged, ok := fastpath.WithAge(b, age); ok {
		return aged, redactions, nil
	}
	return g.marshalRedacted(out)
}

// answer is a tool result from its redacted JSON, the same bytes as
// structured content and as text, and records in the call's state what
// the audit record of the result says of it.
func answer(st *resultNotes, b []byte, redactions int, isError bool) *mcp.CallToolResult {
	st.redactions, st.resultBytes = redactions, 2*len(b) // text and structured content
	return &mcp.CallToolResult{
		StructuredContent: json.RawMessage(b),
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		IsError:           isError,
	}
}

func (g *Server) marshalRedacted(out any) ([]byte, int, error) {
	b, err := json.Marshal(out)
	if err != nil {
		return nil, 0, err
	}
	b, n := g.redactor.JSON(b)
	return b, n, nil
}
