package gateway

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/redact"
)

// A tool list is measured from its tools' kept measures, and the sum is
// what marshalling and redacting the whole list gives: bytes and
// redactions, for the whole list, a part of it, and none of it.
func TestAToolListMeasuresAsIfMarshalledWhole(t *testing.T) {
	t.Parallel()
	// Exact secrets that occur in tool descriptions, so that redactions
	// are counted too.
	red, _ := redact.New("visibility query", "the workflow id")
	g, err := NewServer(&fakeReader{}, Options{Namespace: "default", Audit: &fakeAuditor{}, Redactor: red})
	if err != nil {
		t.Fatal(err)
	}
	var tools []*mcp.Tool
	for _, tl := range g.catalog() {
		tools = append(tools, tl.def)
	}
	for name, list := range map[string][]*mcp.Tool{"all": tools, "some": tools[2:5], "one": tools[:1], "none": {}} {
		for i := 0; i < 2; i++ { // measured anew, then from what was kept
			res := &mcp.ListToolsResult{Tools: list, NextCursor: "c"}
			gotBytes, gotN := g.measure(res)
			b, _ := json.Marshal(res)
			want, wantN := red.JSON(b)
			if gotBytes != len(want) || gotN != wantN {
				t.Fatalf("%s: measured %d bytes, %d redactions; whole, %d and %d", name, gotBytes, gotN, len(want), wantN)
			}
			if name == "all" && wantN == 0 {
				t.Fatal("the test's secrets redacted nothing")
			}
		}
	}
}

// Tool definitions carry their schemas as JSON, marshalled once; a tool
// list goes on the wire exactly as it did with the schema values.
func TestToolSchemasGoOnTheWireAsTheirValuesWould(t *testing.T) {
	t.Parallel()
	g := mustServer(t, &fakeReader{})
	var raw, values []*mcp.Tool
	for _, tl := range g.catalog() {
		raw = append(raw, tl.def)
		v := *tl.def
		v.InputSchema, v.OutputSchema = tl.schemas[0], tl.schemas[1]
		values = append(values, &v)
	}
	wire := func(tools []*mcp.Tool) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b) // as the go-sdk's jsonrpc2 encodes
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&mcp.ListToolsResult{Tools: tools}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if got, want := wire(raw), wire(values); got != want {
		t.Fatalf("tools/list changed on the wire:\n%s\nwas\n%s", got, want)
	}
}
