package read

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/porthole-dev/porthole/redact/quote"
)

// Class is what a string field of a result (or of a tool's input) holds, as
// a disclosure profile names it. Every string, []string and quote.Text
// field below a result carries its class in a `disclose` tag:
//
//	disclose:"CLASS"        the class; the kind is read from the Go type
//	disclose:"CLASS,KIND"   the class, and the kind docs/disclosure.md names
//
// A profile keeps or withholds a class; a withheld field is left at its
// zero value, which every such field's json tag omits.
type Class string

// The classes. Identifiers are the names a workflow author or operator
// chose; free text and worker identities are somebody else's words.
const (
	ClassWorkflowID      Class = "workflow-id"
	ClassRunID           Class = "run-id"
	ClassScheduleID      Class = "schedule-id"
	ClassActivityID      Class = "activity-id"
	ClassTimerID         Class = "timer-id"
	ClassBatchJobID      Class = "batch-job-id"
	ClassTaskQueue       Class = "task-queue"
	ClassWorkerIdentity  Class = "worker-identity"
	ClassTypeName        Class = "type-name"
	ClassDeployment      Class = "deployment"
	ClassNexusName       Class = "nexus-name"
	ClassSearchAttribute Class = "search-attribute"
	ClassCluster         Class = "cluster"
	ClassFreeText        Class = "free-text"
	ClassScheduleSpec    Class = "schedule-spec"
	ClassVersion         Class = "version"
	// ClassEnum is one of a fixed set of Temporal's words (a status, a
	// state, an event type); ClassPorthole is porthole's own: the
	// namespace it is configured for, the page tokens it seals, its own
	// sentences. Neither can be withheld: they reveal nothing a caller did
	// not choose or porthole did not write.
	ClassEnum     Class = "enum"
	ClassPorthole Class = "porthole"
	// ClassUpstreamText is the whole answer of an upstream MCP server's
	// tool (PORTHOLE_ROSTER_FILE).
	ClassUpstreamText Class = "upstream-text"
)

// Classes are every class, in the order docs and refusals list them.
var Classes = []Class{
	ClassWorkflowID, ClassRunID, ClassScheduleID, ClassActivityID, ClassTimerID, ClassBatchJobID,
	ClassTaskQueue, ClassWorkerIdentity, ClassTypeName, ClassDeployment, ClassNexusName,
	ClassSearchAttribute, ClassCluster, ClassFreeText, ClassScheduleSpec, ClassVersion,
	ClassUpstreamText, ClassEnum, ClassPorthole,
}

// Withholdable reports whether a profile may withhold c.
func (c Class) Withholdable() bool {
	return slices.Contains(Classes, c) && c != ClassEnum && c != ClassPorthole
}

// Pseudonymisable reports whether a profile may show c's values as
// pseudonyms: the identifiers an agent follows a workflow by.
func (c Class) Pseudonymisable() bool {
	switch c {
	case ClassWorkflowID, ClassRunID, ClassScheduleID, ClassActivityID, ClassTaskQueue, ClassWorkerIdentity:
		return true
	}
	return false
}

// ClassSet is a set of classes, one bit each in the order of Classes.
type ClassSet uint32

// Of is the set holding cs.
func Of(cs ...Class) ClassSet {
	var s ClassSet
	for _, c := range cs {
		if i := slices.Index(Classes, c); i >= 0 {
			s |= 1 << i
		}
	}
	return s
}

// Has reports whether c is in s.
func (s ClassSet) Has(c Class) bool { return s&Of(c) != 0 }

// List is s's classes, in the order of Classes.
func (s ClassSet) List() []Class {
	var out []Class
	for i, c := range Classes {
		if s&(1<<i) != 0 {
			out = append(out, c)
		}
	}
	return out
}

// String is s's classes joined by ", ".
func (s ClassSet) String() string {
	var names []string
	for _, c := range s.List() {
		names = append(names, string(c))
	}
	return strings.Join(names, ", ")
}

// Field is one leaf field of a type, as docs/disclosure.md lists it.
type Field struct {
	Path  string // the JSON path, "[]" marking a list: "workflows[].workflowId"
	Kind  string // what it reveals: identifier, quoted text, time, ...
	Class Class  // "" for a field that is not a string (a time, a count, a flag)
}

var (
	timeType = reflect.TypeFor[time.Time]()
	textType = reflect.TypeFor[quote.Text]()
)

// classed reports whether a field of type t must carry a class.
func classed(t reflect.Type) bool {
	t = elem(t)
	return t == textType || t.Kind() == reflect.String
}

func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t
}

// fieldClass is f's class and kind from its tag, or an error naming the
// field that has none (or a class that does not exist).
func fieldClass(owner reflect.Type, f reflect.StructField) (Class, string, error) {
	tag := f.Tag.Get("disclose")
	class, kind, _ := strings.Cut(tag, ",")
	if tag == "" || !slices.Contains(Classes, Class(class)) {
		return "", "", fmt.Errorf("%s.%s has no disclosure class (a disclose tag naming one of %v)", owner.Name(), f.Name, Classes)
	}
	// A withheld field is left at its zero value: its JSON must leave that
	// out (omitempty does not leave out a struct, omitzero does).
	_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	omitted := strings.Contains(opts, "omitzero") || strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Struct
	if Class(class).Withholdable() && !omitted {
		return "", "", fmt.Errorf("%s.%s is of the class %s, which a profile may withhold, but its json tag would not leave it out when withheld (add omitzero)", owner.Name(), f.Name, class)
	}
	if t := f.Type; Class(class).Pseudonymisable() && t.Kind() != reflect.String && t != textType && t != reflect.PointerTo(textType) {
		return "", "", fmt.Errorf("%s.%s is of the class %s, which a profile may pseudonymise, but is a %s: Disclose pseudonymises strings and quoted texts only", owner.Name(), f.Name, class, t)
	}
	if kind == "" {
		kind = kindOf(f, Class(class))
	}
	return Class(class), kind, nil
}

// kindOf is what a field reveals, read from its class and type.
func kindOf(f reflect.StructField, c Class) string {
	t := elem(f.Type)
	switch {
	case t == textType:
		return "quoted text"
	case t == timeType:
		return "time"
	case t.Kind() == reflect.Bool:
		return "flag"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		if strings.HasSuffix(f.Name, "Seconds") {
			return "duration"
		}
		return "count"
	case c == ClassEnum:
		return "enum"
	case c == ClassVersion:
		return "version"
	case c == ClassScheduleSpec:
		return "schedule spec"
	}
	return "identifier"
}

// jsonName is f's name in JSON.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// walkable reports whether Disclose can copy a nested field of type t: a
// struct, a pointer to one, or a slice of them.
func walkable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Pointer, reflect.Slice:
		return t.Elem().Kind() == reflect.Struct
	}
	return false
}

// nested reports whether a field of type t is a struct walked into, rather
// than a leaf.
func nested(t reflect.Type) bool {
	t = elem(t)
	return t.Kind() == reflect.Struct && t != timeType && t != textType
}

// Fields lists the leaf fields of t (a result type, or a pointer to one),
// embedded structs flattened as JSON flattens them. It fails on a string
// field without a class.
func Fields(t reflect.Type) ([]Field, error) {
	var out []Field
	err := fields(elem(t), "", &out)
	return out, err
}

func fields(t reflect.Type, prefix string, out *[]Field) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			if err := fields(elem(f.Type), prefix, out); err != nil {
				return err
			}
			continue
		}
		path := prefix + jsonName(f)
		if nested(f.Type) && !walkable(f.Type) {
			return fmt.Errorf("%s.%s is a %s, which Disclose cannot copy: use a struct, a pointer to one or a slice of them", t.Name(), f.Name, f.Type)
		}
		if nested(f.Type) {
			suffix := "."
			if f.Type.Kind() == reflect.Slice {
				suffix = "[]."
			}
			if err := fields(elem(f.Type), path+suffix, out); err != nil {
				return err
			}
			continue
		}
		if f.Type.Kind() == reflect.Slice {
			path += "[]"
		}
		field := Field{Path: path}
		if classed(f.Type) {
			c, kind, err := fieldClass(t, f)
			if err != nil {
				return err
			}
			field.Class, field.Kind = c, kind
		} else {
			field.Kind = kindOf(f, "")
		}
		*out = append(*out, field)
	}
	return nil
}

// ClassesOf is the set of classes t's fields have.
func ClassesOf(t reflect.Type) ClassSet {
	return planOf(elem(t)).below
}

// Disclosure is what one caller's profile makes of a result: the classes
// withheld, those shown as pseudonyms, and what becomes of the free text
// it keeps.
type Disclosure struct {
	Withhold ClassSet
	// Pseudonymise are the classes whose values are replaced by
	// Pseudonym's; only string and quoted-text fields of the
	// pseudonymisable classes are.
	Pseudonymise ClassSet
	Pseudonym    func(c Class, value string) string
	// FreeText rewrites a kept free-text value and says how many things it
	// replaced; nil leaves free text as it is.
	FreeText func(quote.Text) (quote.Text, int)
}

// MinReplacedInText is the shortest real value Disclose looks for in free
// text to put its pseudonym in its place: a shorter one (an activity id
// "1") would be found in every number, and a pseudonym is 60 bytes or
// more, so a text full of short ids would grow manyfold.
const MinReplacedInText = 8

// Disclose is the result v (a pointer to a result struct) as d discloses
// it, and how many free-text replacements it made. A field of a withheld
// class is left at its zero value (and so out of the JSON); one of a
// pseudonymised class holds its value's pseudonym, and where the value
// (MinReplacedInText bytes or more) appears in the result's kept free
// text, the pseudonym is put in its place there too. v itself is never
// written to: it may be the cache's, shared by other calls, so every
// struct, pointer and slice on the way to a change is copied. A v with no
// field d changes is returned as it is.
func Disclose(v any, d Disclosure) (any, int) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return v, 0
	}
	if d.Pseudonym == nil {
		d.Pseudonymise = 0
	}
	p := planOf(rv.Type().Elem())
	w := &walk{d: d, touched: d.Withhold | d.Pseudonymise}
	text := p.below.Has(ClassFreeText) && !d.Withhold.Has(ClassFreeText)
	if p.below&w.touched == 0 && !(text && d.FreeText != nil) {
		return v, 0
	}
	cp := reflect.New(rv.Type().Elem())
	cp.Elem().Set(rv.Elem())
	if p.below&w.touched != 0 {
		p.apply(cp.Elem(), w)
	}
	// The free text, once the pseudonyms it is to take are known.
	if text && (d.FreeText != nil || len(w.pairs) > 0) {
		w.reals = slices.SortedFunc(maps.Keys(w.pairs), func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
		w.touched, w.text = Of(ClassFreeText), true
		p.apply(cp.Elem(), w)
	}
	return cp.Interface(), w.n
}

// walk is one pass of Disclose over a result.
type walk struct {
	d       Disclosure
	touched ClassSet
	// pairs are the real values the first pass pseudonymised and their
	// pseudonyms; reals their real values, longest first, for the second
	// pass, which text marks.
	pairs map[string]string
	reals []string
	text  bool
	n     int
}

// replace is s with each real value of w.pairs replaced by its pseudonym,
// in one pass from the left (what it puts in is not read again), the
// longest of those that start at one place first.
func (w *walk) replace(s string) string {
	var b strings.Builder
	for {
		first, at := "", -1
		for _, r := range w.reals {
			if i := strings.Index(s, r); i >= 0 && (at < 0 || i < at) {
				first, at = r, i
			}
		}
		if at < 0 {
			break
		}
		b.WriteString(s[:at])
		b.WriteString(w.pairs[first])
		s = s[at+len(first):]
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(s)
	return b.String()
}

// plan is how Disclose walks one struct type: its fields that have a class
// or hold some below them.
type plan struct {
	below ClassSet // every class at or below the type
	steps []step
}

type step struct {
	index int
	class Class    // a leaf's class; "" for a struct walked into
	below ClassSet // the leaf's class, or the classes below the struct
	sub   *plan
}

var plans sync.Map // reflect.Type -> *plan

// planOf is t's plan, made once. A string field without a class is left
// out of it (TestEveryStringFieldHasAClass keeps there being none).
func planOf(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := &plan{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch {
		case nested(f.Type):
			sub := planOf(elem(f.Type))
			if sub.below != 0 {
				p.steps = append(p.steps, step{index: i, below: sub.below, sub: sub})
			}
		case classed(f.Type):
			if c, _, err := fieldClass(t, f); err == nil {
				p.steps = append(p.steps, step{index: i, class: c, below: Of(c)})
			}
		}
	}
	for _, s := range p.steps {
		p.below |= s.below
	}
	plans.Store(t, p)
	return p
}

// apply discloses the addressable struct sv as w says, copying what it
// changes below it.
func (p *plan) apply(sv reflect.Value, w *walk) {
	for _, s := range p.steps {
		if s.below&w.touched == 0 {
			continue
		}
		f := sv.Field(s.index)
		switch {
		case s.sub == nil && w.d.Withhold&s.below != 0: // a classed step's below is its class
			f.SetZero()
		case s.sub == nil && w.text:
			w.n += w.freeText(f)
		case s.sub == nil:
			w.pseudonymise(f, s.class)
		case f.Kind() == reflect.Struct:
			s.sub.apply(f, w)
		case f.Kind() == reflect.Pointer && !f.IsNil():
			cp := reflect.New(f.Type().Elem())
			cp.Elem().Set(f.Elem())
			s.sub.apply(cp.Elem(), w)
			f.Set(cp)
		case f.Kind() == reflect.Slice && f.Len() > 0:
			cp := reflect.MakeSlice(f.Type(), f.Len(), f.Len())
			reflect.Copy(cp, f)
			for i := range cp.Len() {
				s.sub.apply(cp.Index(i), w)
			}
			f.Set(cp)
		}
	}
}

// pseudonymise puts the pseudonym of a field's value (a string, a quoted
// text, or a pointer to one) in its place, and keeps the pair for the
// free-text pass. A quoted text's pseudonym is porthole's word, and says
// so by its origin.
func (w *walk) pseudonymise(f reflect.Value, c Class) {
	switch {
	case f.Kind() == reflect.String && f.String() != "":
		real := f.String()
		pn := w.d.Pseudonym(c, real)
		w.keep(real, pn)
		f.SetString(pn)
	case f.Type() == textType && f.Interface().(quote.Text).Text != "":
		t := f.Interface().(quote.Text)
		pn := w.d.Pseudonym(c, t.Text)
		w.keep(t.Text, pn)
		f.Set(reflect.ValueOf(quote.Text{Text: pn, Origin: quote.OriginPorthole}))
	case f.Kind() == reflect.Pointer && f.Type().Elem() == textType && !f.IsNil():
		t := *f.Interface().(*quote.Text)
		pn := w.d.Pseudonym(c, t.Text)
		w.keep(t.Text, pn)
		f.Set(reflect.ValueOf(&quote.Text{Text: pn, Origin: quote.OriginPorthole}))
	}
}

func (w *walk) keep(real, pn string) {
	if len(real) >= MinReplacedInText {
		if w.pairs == nil {
			w.pairs = map[string]string{}
		}
		w.pairs[real] = pn
	}
}

// replaceReal is t with the real values the result shows as pseudonyms
// replaced by them; and where the quoting cut t inside one, what the cut
// left of it (its first MinReplacedInText bytes or more) replaced by
// quote.PartialMarker.
func (w *walk) replaceReal(t quote.Text) quote.Text {
	head, cut := t.CutOff()
	head = w.replace(head)
	if cut {
		for real := range w.pairs {
			for n := len(real) - 1; n >= MinReplacedInText; n-- {
				if strings.HasSuffix(head, real[:n]) {
					head = head[:len(head)-n] + quote.PartialMarker
					break
				}
			}
		}
	}
	return t.WithHead(head)
}

// freeText rewrites a kept free-text field (a quote.Text, or a pointer to
// one): the real values the result shows as pseudonyms replaced by them,
// then the profile's rewrite. It returns how many things the rewrite
// replaced.
func (w *walk) freeText(f reflect.Value) int {
	var t quote.Text
	switch {
	case f.Type() == textType:
		t = f.Interface().(quote.Text)
	case f.Kind() == reflect.Pointer && f.Type().Elem() == textType && !f.IsNil():
		t = *f.Interface().(*quote.Text)
	default:
		return 0
	}
	before := t.Text
	if len(w.reals) > 0 {
		t = w.replaceReal(t)
	}
	n := 0
	if w.d.FreeText != nil {
		t, n = w.d.FreeText(t)
	}
	if t.Text == before {
		return n
	}
	if f.Kind() == reflect.Pointer {
		f.Set(reflect.ValueOf(&t))
	} else {
		f.Set(reflect.ValueOf(t))
	}
	return n
}
