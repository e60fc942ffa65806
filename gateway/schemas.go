package gateway

import "github.com/google/jsonschema-go/jsonschema"

// portable is s with no schema under it whose type is a list: a schema of
// types ["null", "array"] (what jsonschema-go derives for a Go slice or
// pointer) becomes an anyOf of one schema a type. JSON Schema reads the
// two alike: the assertions about one type (items, properties, required)
// go in that type's branch, since they pass a value of another type
// anyway; enum and const, which assert about any value, go in every
// branch; the applicators that may hold schemas of any type (allOf, not,
// if, $ref...) and the annotations (title, description, default...) stay
// on the whole, so no schema is in two places and the list grows only by
// a {"type": "null"} a branch. Some clients map a tool's schema onto a
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
	return splitTypes(s)
}

// splitTypes is the anyOf of one schema a type that s, whose type is a
// list, reads as (see portable).
func splitTypes(s *jsonschema.Schema) *jsonschema.Schema {
	whole := &jsonschema.Schema{Title: s.Title, Description: s.Description, Comment: s.Comment, Default: s.Default,
		Examples: s.Examples, Deprecated: s.Deprecated, ReadOnly: s.ReadOnly, WriteOnly: s.WriteOnly,
		Ref: s.Ref, AllOf: s.AllOf, OneOf: s.OneOf, Not: s.Not, If: s.If, Then: s.Then, Else: s.Else}
	if s.AnyOf != nil {
		whole.AllOf = append(whole.AllOf, &jsonschema.Schema{AnyOf: s.AnyOf})
	}
	rest := *s
	rest.Title, rest.Description, rest.Comment, rest.Default, rest.Examples = "", "", "", nil, nil
	rest.Deprecated, rest.ReadOnly, rest.WriteOnly = false, false, false
	rest.Ref, rest.AllOf, rest.AnyOf, rest.OneOf, rest.Not, rest.If, rest.Then, rest.Else = "", nil, nil, nil, nil, nil, nil, nil
	first := true
	for _, t := range s.Types {
		var one *jsonschema.Schema
		switch {
		case t == "null":
			one = &jsonschema.Schema{Enum: s.Enum, Const: s.Const}
		case first:
			one, first = &rest, false
		default:
			one = rest.CloneSchemas() // a schema is a tree: no part in two places
		}
		one.Types, one.Type = nil, t
		whole.AnyOf = append(whole.AnyOf, one)
	}
	return whole
}
