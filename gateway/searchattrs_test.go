package gateway

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/read"
)

// attributesReader answers ListSearchAttributes with a fixed list.
type attributesReader struct {
	*fakeReader
	list read.SearchAttributeList
}

func (a *attributesReader) ListSearchAttributes(context.Context) (*read.SearchAttributeList, error) {
	a.calls.Add(1)
	l := a.list
	l.Observation = read.Observation{Namespace: "default", ObservedAt: time.Now()}
	return &l, nil
}

func listAttributes(t *testing.T, cs *mcp.ClientSession) read.SearchAttributeList {
	t.Helper()
	res, err := cs.CallTool(context.Background(), callParams(policy.ToolListSearchAttributes))
	if err != nil || res.IsError {
		t.Fatalf("list_search_attributes: %v %s", err, textOf(res))
	}
	var l read.SearchAttributeList
	if err := json.Unmarshal([]byte(textOf(res)), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func allowedByName(l read.SearchAttributeList) map[string]bool {
	m := map[string]bool{}
	for _, a := range l.Attributes {
		m[a.Name] = a.AllowedInQueries
	}
	return m
}

// TestSearchAttributesAreMarkedByTheQueryRulesInForceAtTheCall: the marks
// follow the policy file reloaded between two calls, although the second
// is answered from the cache; a forbidden system attribute is never marked.
func TestSearchAttributesAreMarkedByTheQueryRulesInForceAtTheCall(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policy.json")
	writeFile(t, path, `{"principals": {"local": {"tools": ["*"]}}, "queryAttributes": ["CustomerId"]}`)
	store, err := policy.OpenFileStore(path)
	if err != nil {
		t.Fatal(err)
	}
	r := &attributesReader{fakeReader: &fakeReader{}, list: read.SearchAttributeList{Complete: true, Attributes: []read.SearchAttribute{
		{Name: "CustomerId", Type: "Keyword", Source: "temporal"},
		{Name: "Region", Type: "Keyword", Source: "temporal"},
		{Name: "TemporalNamespaceDivision", Type: "Keyword", System: true, Source: "temporal"},
		{Name: "WorkflowType", Type: "Keyword", System: true, Source: "temporal"},
	}}}
	g, err := NewServer(r, Options{Namespace: "default", Audit: &fakeAuditor{}, Policy: store, CacheTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	cs := connect(t, g)
	want := map[string]bool{"CustomerId": true, "Region": false, "TemporalNamespaceDivision": false, "WorkflowType": true}
	if got := allowedByName(listAttributes(t, cs)); !maps.Equal(got, want) {
		t.Fatalf("marks %v, want %v", got, want)
	}
	writeFile(t, path, `{"principals": {"local": {"tools": ["*"]}}, "queryAttributes": ["Region"]}`)
	if _, err := store.Reload(); err != nil {
		t.Fatal(err)
	}
	second := listAttributes(t, cs)
	want["CustomerId"], want["Region"] = false, true
	if got := allowedByName(second); !maps.Equal(got, want) {
		t.Fatalf("after the reload, marks %v, want %v", got, want)
	}
	if second.AgeSeconds == nil || r.calls.Load() != 1 {
		t.Fatalf("the second answer was not the cache's (age %v, %d reads): the test shows nothing", second.AgeSeconds, r.calls.Load())
	}
}

// TestSearchAttributesTemporalRefusedAreThoseThePortholeKnows: where
// Temporal refused the list, the answer says it is incomplete, keeps the
// adapter's note, and names the screen's system attributes and the custom
// ones the operator allowed, each from porthole and allowed in queries.
func TestSearchAttributesTemporalRefusedAreThoseThePortholeKnows(t *testing.T) {
	t.Parallel()
	note := quote.Says("Temporal refused to list this namespace's search attributes (PermissionDenied).")
	r := &attributesReader{fakeReader: &fakeReader{}, list: read.SearchAttributeList{Attributes: []read.SearchAttribute{}, Note: &note}}
	g, err := NewServer(r, Options{Namespace: "default", Audit: &fakeAuditor{}, QueryRules: policy.QueryRules{CustomAttributes: []string{"CustomerId"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	l := listAttributes(t, connect(t, g))
	if l.Complete || l.Note == nil || *l.Note != note {
		t.Fatalf("complete %v, note %+v: want incomplete with the note", l.Complete, l.Note)
	}
	if len(l.Attributes) != len(policy.SystemAttributes)+1 {
		t.Fatalf("%d attributes, want the %d system ones and CustomerId", len(l.Attributes), len(policy.SystemAttributes))
	}
	for _, a := range l.Attributes {
		if a.Source != "porthole" || !a.AllowedInQueries || a.Type != "" || a.System == (a.Name == "CustomerId") {
			t.Errorf("attribute %+v: want from porthole, allowed, untyped, system unless CustomerId", a)
		}
	}
}
