package gateway

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/redact/quote"
)

// The field tables of docs/disclosure.md are generated from the result types
// of every tool; this test fails when the document and the code disagree.
// UPDATE_DISCLOSURE=1 go test ./gateway -run Disclosure rewrites them.

const (
	disclosurePath  = "../docs/disclosure.md"
	generatedStart  = "<!-- generated: field tables; do not edit by hand -->"
	generatedFinish = "<!-- end of generated field tables -->"
)

// fieldKind names what a field reveals.
func fieldKind(f reflect.StructField) string {
	t := f.Type
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if d := f.Tag.Get("disclose"); d != "" {
		return d
	}
	switch {
	case t == reflect.TypeFor[quote.Text]():
		return "quoted text"
	case t == reflect.TypeFor[time.Time]():
		return "time"
	case t.Kind() == reflect.Bool:
		return "flag"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		if strings.HasSuffix(f.Name, "Seconds") {
			return "duration"
		}
		return "count"
	case t.Kind() == reflect.String && t.Name() != "string":
		return "enum"
	case t.Kind() == reflect.String:
		return "identifier"
	}
	return ""
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// fieldRows lists the leaf fields of t as "path | kind".
func fieldRows(t reflect.Type, prefix string, rows *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			fieldRows(f.Type, prefix, rows)
			continue
		}
		path := prefix + jsonName(f)
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Time]() && ft != reflect.TypeFor[quote.Text]() {
			suffix := "."
			if f.Type.Kind() == reflect.Slice {
				suffix = "[]."
			}
			fieldRows(ft, path+suffix, rows)
			continue
		}
		if f.Type.Kind() == reflect.Slice {
			path += "[]"
		}
		*rows = append(*rows, fmt.Sprintf("| `%s` | %s |", path, fieldKind(f)))
	}
}

func generatedTables() string {
	var b strings.Builder
	b.WriteString(generatedStart + "\n")
	for _, tl := range (&Server{reader: &fakeReader{}}).catalog() {
		var rows []string
		fieldRows(tl.output, "", &rows)
		fmt.Fprintf(&b, "\n### `%s`\n\n| field | reveals |\n|---|---|\n%s\n", tl.def.Name, strings.Join(rows, "\n"))
	}
	b.WriteString("\n" + generatedFinish)
	return b.String()
}

func TestDisclosureDocMatchesTheResultTypes(t *testing.T) {
	b, err := os.ReadFile(disclosurePath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, generatedStart), strings.Index(doc, generatedFinish)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated markers", disclosurePath)
	}
	want := generatedTables()
	got := doc[i : j+len(generatedFinish)]
	if got == want {
		return
	}
	if os.Getenv("UPDATE_DISCLOSURE") == "1" {
		if err := os.WriteFile(disclosurePath, []byte(doc[:i]+want+doc[j+len(generatedFinish):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s is out of step with the result types; run UPDATE_DISCLOSURE=1 go test ./gateway -run Disclosure and review the diff", disclosurePath)
}

func TestEveryResultFieldHasAKind(t *testing.T) {
	t.Parallel()
	if strings.Contains(generatedTables(), "|  |") {
		t.Fatal("a result field has no disclosure kind; give it a disclose tag")
	}
}
