package gateway

import (
	"context"
	"reflect"
	"slices"
	"strings"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/pseudonym"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/redact"
	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/read"
)

// disclosureOf is the disclosure profile of the call in ctx, as the grants
// middleware found it for its caller; the default when none was found.
func disclosureOf(ctx context.Context) *policy.Disclosure {
	if d := resultNotesFrom(ctx).disclosure; d != nil {
		return d
	}
	return policy.KeepAll
}

// disclose is out (a tool's result) as the call's profile discloses it:
// the fields of the classes it withholds absent, its personal-data
// detectors run on the free text it keeps, and the classes withheld named
// in the result. It returns how many replacements the detectors made. out
// itself is left as it was: it may be the cache's.
func (g *Server) disclose(d *policy.Disclosure, out any) (any, int) {
	if d.Default() {
		return out, 0
	}
	rd := read.Disclosure{Withhold: d.Withhold, Pseudonymise: d.Pseudonymise}
	if d.Pseudonymise != 0 {
		rd.Pseudonym = func(c read.Class, v string) string {
			return g.opts.Pseudonyms.Make(d.PseudonymKey, string(c), g.opts.Namespace, v)
		}
	}
	if len(d.Personal) > 0 {
		rd.FreeText = personalText(g.personalRedactor(d))
	}
	v, n := read.Disclose(out, rd)
	classes := read.ClassesOf(reflect.TypeOf(out))
	withheld, pseudonymised := d.Withhold&classes, d.Pseudonymise&classes
	if o, ok := v.(interface{ Observed() *read.Observation }); ok && withheld|pseudonymised != 0 {
		// Disclose copied v: it changed a field of one of these classes.
		o.Observed().Withheld, o.Observed().Pseudonymised = withheld.List(), pseudonymised.List()
	}
	return v, n
}

// personalText is a profile's detectors run on a kept free text: r over
// its words; and where the quoting cut it, the start of a value the cut
// left (an address it cut through) replaced by redact.PartialMarker, as the
// quoting does for the server's own detectors.
func personalText(r *redact.Redactor) func(quote.Text) (quote.Text, int) {
	return func(t quote.Text) (quote.Text, int) {
		head, cut := t.CutOff()
		out, n := r.String(head)
		if cut {
			if i := r.TrailingPartial(out); i < len(out) {
				out, n = out[:i]+redact.PartialMarker, n+1
			}
		}
		if n == 0 {
			return t, 0
		}
		return t.WithHead(out), n
	}
}

// personalRedactor is the server's redactor with d's personal-data
// detectors switched on beside those it has, made once for each
// disclosure (g.personal, by its Key, which names its detectors).
func (g *Server) personalRedactor(d *policy.Disclosure) *redact.Redactor {
	if r, ok := g.personal.Load(d.Key()); ok {
		return r.(*redact.Redactor)
	}
	r, _ := g.personal.LoadOrStore(d.Key(), g.redactor.WithPersonal(slices.Concat(g.redactor.Personal(), d.Personal)...))
	return r.(*redact.Redactor)
}

// argumentClass is an argument of a tool's input that names a value of a
// class: workflowId names a workflow id.
type argumentClass struct {
	index int
	name  string
	class read.Class
}

// argumentClasses are the arguments of input type t that carry a
// `disclose` tag.
func argumentClasses(t reflect.Type) []argumentClass {
	var out []argumentClass
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if c := f.Tag.Get("disclose"); c != "" {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out = append(out, argumentClass{index: i, name: name, class: read.Class(c)})
		}
	}
	return out
}

// disclosedArguments applies the call's profile to its arguments. It
// refuses a call that asks about what the profile withholds: an argument
// of a withheld class, or a visibility query naming an attribute whose
// values are of one (otherwise a caller could confirm a guessed customer
// number it is never shown). For a class the profile pseudonymises, an
// argument must be a pseudonym porthole made for this caller's profile,
// and is replaced by the value it stands for; a real value is refused,
// for the same reason. A query compares a pseudonymised attribute only by
// pseudonym and only exactly (=, !=, IN, NOT IN), the pseudonyms
// translated, and orders by none. For a profile that withholds
// search-attribute names, a query may name no custom attribute, and the
// screen's refusal does not list them. It runs before the tool's own
// checks, so that their refusals cannot name what it withholds. What it
// opened is noted for the result's audit record.
func disclosedArguments[In any](g *Server, ctx context.Context, d *policy.Disclosure, in *In, args []argumentClass) error {
	if d.Withhold|d.Pseudonymise == 0 {
		return nil
	}
	v := reflect.ValueOf(in).Elem()
	for _, a := range args {
		f := v.Field(a.index)
		switch {
		case f.String() == "":
		case d.Withhold.Has(a.class):
			return policy.Refuse("%s names a %s, which your disclosure profile (%s) withholds; porthole does not answer questions about what it withholds from you", a.name, a.class, d.Name)
		case d.Pseudonymise.Has(a.class):
			real, err := g.opts.Pseudonyms.Open(d.PseudonymKey, string(a.class), g.opts.Namespace, f.String())
			if err != nil {
				return policy.Refuse("%s must be a pseudonym porthole gave you (%s...): your disclosure profile (%s) shows a %s only as its pseudonym", a.name, pseudonym.Prefix, d.Name, a.class)
			}
			g.noteOpened(ctx, a.name, real)
			f.SetString(real)
		}
	}
	if q, ok := any(in).(queried); ok && q.query() != "" {
		return g.disclosedQuery(ctx, d, q)
	}
	return nil
}

// disclosedQuery is disclosedArguments for a visibility query: refused
// where it names a withheld class or compares or orders a pseudonymised
// one as it may not, its pseudonyms translated.
func (g *Server) disclosedQuery(ctx context.Context, d *policy.Disclosure, q queried) error {
	rules := g.queryRules()
	rules.HideCustom = d.Withhold.Has(read.ClassSearchAttribute)
	translated := false
	if d.Pseudonymise != 0 {
		rules.Values = func(attr, op, value string) (string, error) {
			c := policy.AttributeClass(attr)
			if !d.Pseudonymise.Has(c) {
				return value, nil
			}
			if !exactComparison(op) {
				return "", policy.Refuse("the query compares %s with %s, but your disclosure profile (%s) shows a %s only as its pseudonym, which can be compared only with =, !=, IN or NOT IN", attr, strings.ToUpper(op), d.Name, c)
			}
			real, err := g.opts.Pseudonyms.Open(d.PseudonymKey, string(c), g.opts.Namespace, value)
			if err != nil {
				return "", policy.Refuse("the query compares %s with a value that is not a pseudonym porthole gave you: your disclosure profile (%s) shows a %s only as its pseudonym", attr, d.Name, c)
			}
			translated = true
			return real, nil
		}
	}
	screened, err := policy.ScreenQuery(q.query(), rules)
	if err != nil {
		return err
	}
	if attr, class := policy.WithheldInQuery(screened.Attributes, d.Withhold); attr != "" {
		return policy.Refuse("the query names %s, whose values are a %s, which your disclosure profile (%s) withholds; porthole does not answer questions about what it withholds from you", attr, class, d.Name)
	}
	for _, attr := range screened.OrderBy {
		if c := policy.AttributeClass(attr); d.Pseudonymise.Has(c) {
			return policy.Refuse("the query orders by %s, but your disclosure profile (%s) shows a %s only as its pseudonym, whose order is not the value's", attr, d.Name, c)
		}
	}
	if translated {
		g.noteOpened(ctx, "query", screened.Text)
		q.setQuery(screened.Text)
	}
	return nil
}

// noteOpened notes for the result's audit record the value an argument's
// pseudonyms stood for, redacted and cut as the call record's arguments
// are.
func (g *Server) noteOpened(ctx context.Context, name, value string) {
	v, _, cut := g.redactor.Cut(value, audit.MaxArgBytes)
	st := resultNotesFrom(ctx)
	st.opened = append(st.opened, audit.Arg{Name: name, Value: v, Truncated: cut})
}

// exactComparison reports whether op compares a value exactly.
func exactComparison(op string) bool {
	switch op {
	case "=", "!=", "<>", "in", "not in":
		return true
	}
	return false
}

// queried is a tool input with a visibility query.
type queried interface {
	query() string
	setQuery(string)
}

func (in *listWorkflowsInput) query() string      { return in.Query }
func (in *countWorkflowsInput) query() string     { return in.Query }
func (in *listWorkflowsInput) setQuery(q string)  { in.Query = q }
func (in *countWorkflowsInput) setQuery(q string) { in.Query = q }

// ToolResult is one of porthole's own tools and the Go type of its result.
type ToolResult struct {
	Name string
	Type reflect.Type
}

// ResultTypes are porthole's own tools, in the order tools/list shows
// them, each with its result type: what docs/disclosure.md and `porthole
// disclosure` list the fields of.
func ResultTypes() []ToolResult {
	var out []ToolResult
	for _, t := range (&Server{}).catalog() {
		out = append(out, ToolResult{Name: t.def.Name, Type: t.output})
	}
	return out
}
