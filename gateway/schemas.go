package gateway

import "github.com/google/jsonschema-go/jsonschema"

// portable is s with no schema under it whose type is a list: a schema of
// types ["null", "array"] (what jsonschema-go derives for a Go slice, map
// or pointer) becomes an anyOf of one schema a type, each holding s's
// assertions, the annotations (title, description) staying on the whole.
// JSON Schema reads the two alike: a keyword that asserts about one type
// passes a value of another. Some clients map a tool's schema onto a
// dialect of one type a schema (the OpenAPI subset of Gemini's function
// declarations) and reject a type list; an anyOf of single types they
// take. It rewrites s in place and returns it, or the anyOf that takes
// its place.
func portable(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	for _, m := range []map[string]*jsonschema.Schema{s.Properties, s.PatternProperties, s.Defs, s.Definitions, s.DependentSchemas} {
		for k, v := range m {
			m[k] = portable(v)
		}
	}
	for _, list := range [][]*jsonschema.Schema{s.PrefixItems, s.ItemsArray, s.AllOf, s.AnyOf, s.OneOf} {
		for i, v := range list {
			list[i] = portable(v)
		}
	}
	for _, p := range []**jsonschema.Schema{&s.Items, &s.AdditionalItems, &s.Contains, &s.UnevaluatedItems, &s.AdditionalProperties,
		&s.PropertyNames, &s.UnevaluatedProperties, &s.Not, &s.If, &s.Then, &s.Else, &s.ContentSchema} {
		*p = portable(*p)
	}
	if len(s.Types) < 2 {
		return s
	}
	whole := &jsonschema.Schema{Title: s.Title, Description: s.Description}
	for _, t := range s.Types {
		if t == "null" {
			whole.AnyOf = append(whole.AnyOf, &jsonschema.Schema{Type: "null"})
			continue
		}
		one := *s
		one.Types, one.Type, one.Title, one.Description = nil, t, "", ""
		whole.AnyOf = append(whole.AnyOf, &one)
	}
	return whole
}
