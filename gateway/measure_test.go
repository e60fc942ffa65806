package gateway

import (
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
