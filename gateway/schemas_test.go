package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// typeLists are the paths under a schema's JSON whose "type" is a list.
func typeLists(path string, v any) []string {
	var found []string
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["type"].([]any); ok {
			found = append(found, path)
		}
		for k, c := range v {
			found = append(found, typeLists(path+"."+k, c)...)
		}
	case []any:
		for _, c := range v {
			found = append(found, typeLists(path+"[]", c)...)
		}
	}
	return found
}

// TestNoToolSchemaHasATypeList: every schema of every tool, as tools/list
// sends it, has one type or none.
func TestNoToolSchemaHasATypeList(t *testing.T) {
	t.Parallel()
	g := mustServer(t, &fakeReader{})
	for _, tl := range g.catalog() {
		for kind, raw := range map[string]any{"inputSchema": tl.def.InputSchema, "outputSchema": tl.def.OutputSchema} {
			var v any
			if err := json.Unmarshal(raw.(json.RawMessage), &v); err != nil {
				t.Fatal(err)
			}
			if found := typeLists(kind, v); len(found) > 0 {
				t.Errorf("%s: a type list at %v", tl.def.Name, found)
			}
		}
	}
}

// TestAPortableSchemaTakesWhatTheDerivedOneTakes: the anyOf that replaces
// a type list takes and refuses what the list did, with the assertions of
// each type kept (an array's items, an object's properties).
func TestAPortableSchemaTakesWhatTheDerivedOneTakes(t *testing.T) {
	t.Parallel()
	type inner struct {
		Name string `json:"name"`
	}
	type result struct {
		Kind  *string           `json:"kind" jsonschema:"the kind"`
		When  *time.Time        `json:"when"`
		Items []inner           `json:"items"`
		ByKey map[string]string `json:"byKey"`
		One   *inner            `json:"one"`
		Count *int64            `json:"count"`
	}
	resolve := func(s *jsonschema.Schema) *jsonschema.Resolved {
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	derived := func() *jsonschema.Schema {
		s, err := jsonschema.For[result](nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if len(typeLists("", mustJSON(t, derived()))) == 0 {
		t.Fatal("the derived schema has no type list: the test shows nothing")
	}
	before, after := resolve(derived()), resolve(portable(derived()))
	if found := typeLists("", mustJSON(t, portable(derived()))); len(found) > 0 {
		t.Fatalf("type lists left at %v", found)
	}
	for _, c := range []struct {
		doc  string
		want bool
	}{
		{`{"kind": null, "when": null, "items": null, "byKey": {}, "one": null, "count": null}`, true},
		{`{"kind": null, "when": "2026-12-06T15:00:00Z", "items": [{"name": "a"}], "byKey": {"k": "v"}, "one": {"name": "b"}, "count": 3}`, true},
		{`{"kind": null, "when": 3, "items": null, "byKey": {}, "one": null, "count": null}`, false},
		{`{"kind": null, "when": null, "items": [{"name": 1}], "byKey": {}, "one": null, "count": null}`, false},
		{`{"kind": null, "when": null, "items": "a", "byKey": {}, "one": null, "count": null}`, false},
		{`{"kind": null, "when": null, "items": null, "byKey": {"k": 1}, "one": null, "count": null}`, false},
		{`{"kind": null, "when": null, "items": null, "byKey": {}, "one": {"name": []}, "count": null}`, false},
		{`{"kind": null, "when": null, "items": null, "byKey": {}, "one": null, "count": "3"}`, false},
		{`{"kind": null, "when": null, "items": null, "byKey": {}, "one": null}`, false},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.doc), &v); err != nil {
			t.Fatal(err)
		}
		if a, b := before.Validate(v) == nil, after.Validate(v) == nil; a != c.want || b != c.want {
			t.Errorf("%s: the derived schema takes it %v, the portable one %v; want %v", c.doc, a, b, c.want)
		}
	}
}

func mustJSON(t *testing.T, s *jsonschema.Schema) any {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestAKeywordOfAnyTypeStaysInEveryBranch: an enum beside a type list
// refuses null when null is not among its values, before and after.
func TestAKeywordOfAnyTypeStaysInEveryBranch(t *testing.T) {
	t.Parallel()
	derived := func() *jsonschema.Schema {
		return &jsonschema.Schema{Types: []string{"null", "string"}, Enum: []any{"a", "b"}, Description: "a choice"}
	}
	p := portable(derived())
	if p.Description != "a choice" || len(p.AnyOf) != 2 || p.AnyOf[0].Description != "" {
		t.Fatalf("the annotations are not on the whole: %+v", p)
	}
	before, err := derived().Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	after, err := p.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{nil, "a", "c", 1.0} {
		if a, b := before.Validate(v) == nil, after.Validate(v) == nil; a != b {
			t.Errorf("%v: the derived schema takes it %v, the portable one %v", v, a, b)
		}
	}
}
