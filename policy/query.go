package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/temporalio/sqlparser"

	"github.com/porthole-dev/porthole/temporal/read"
)

// SystemAttributes are the search attributes every Temporal namespace has
// and that hold no user data: identifiers, types, statuses, times, counts.
// A query may name these without the operator allowing them.
var SystemAttributes = []string{
	"WorkflowId", "WorkflowType", "ExecutionStatus", "StartTime", "CloseTime", "ExecutionTime",
	"TaskQueue", "RunId", "HistoryLength", "HistorySizeBytes", "ExecutionDuration", "StateTransitionCount",
	"BuildIds", "ParentWorkflowId", "ParentRunId", "RootWorkflowId", "RootRunId",
	"TemporalScheduledById", "TemporalScheduledStartTime", "TemporalSchedulePaused",
	"TemporalWorkerDeployment", "TemporalWorkerDeploymentVersion", "TemporalWorkflowVersioningBehavior",
}

// neverAllowed are the attributes no query may name, whatever the operator
// lists, each with the reason given when one is named. Names are compared
// without regard to case, as an operator might spell them.
type forbiddenAttribute struct{ name, why string }

var neverAllowed = []forbiddenAttribute{
	// Memo holds user data; it is not a search attribute.
	{"Memo", "memo is user data, and porthole does not search it"},
	// TemporalNamespaceDivision partitions namespaces internally: a query
	// on it reaches workflows the namespace's own listing hides (the
	// schedulers, the batch operations).
	{"TemporalNamespaceDivision", "it reaches the workflows Temporal keeps hidden in the namespace (schedulers, batch operations)"},
}

// forbidden is the entry of neverAllowed that name spells, in any case, or
// nil when name may be queried.
func forbidden(name string) *forbiddenAttribute {
	for i, n := range neverAllowed {
		if strings.EqualFold(name, n.name) {
			return &neverAllowed[i]
		}
	}
	return nil
}

// CheckCustomAttributes refuses a list of custom attributes an operator
// allows that names one no query may name (Memo, TemporalNamespaceDivision),
// so that such a configuration fails at start rather than seeming to work.
func CheckCustomAttributes(names []string) error {
	for _, name := range names {
		if f := forbidden(name); f != nil {
			return fmt.Errorf("%w: %q may never be allowed in queries: %s", ErrConfig, name, f.why)
		}
	}
	return nil
}

// AllowedInQuery reports whether the screen lets a query name the search
// attribute name under rules: what ScreenQuery decides of one column, so
// that list_search_attributes says exactly what the screen does.
func AllowedInQuery(name string, rules QueryRules) bool {
	if forbidden(name) != nil {
		return false
	}
	return slices.Contains(SystemAttributes, name) || !rules.HideCustom && slices.Contains(rules.CustomAttributes, name)
}

// ErrConfig wraps a refusal of porthole's own configuration.
var ErrConfig = errors.New("policy: configuration refused")

// QueryRules say what a visibility query may ask. The zero value takes the
// defaults below.
type QueryRules struct {
	// CustomAttributes are the custom search attributes queries may name.
	// A custom attribute's values are user data: a count over it with
	// STARTS_WITH reads its values one letter at a time, so only the ones
	// an operator lists are allowed.
	CustomAttributes []string
	MaxLen           int  // bytes; default 2048
	MaxInList        int  // values in one IN list; default 100
	MaxDepth         int  // nesting of parentheses and NOT; default 16
	MaxTerms         int  // comparisons in one query; default 64
	DisableOrderBy   bool // refuse ORDER BY
	// HideCustom is set for a caller whose disclosure profile withholds
	// search-attribute names: a query may then name no custom attribute,
	// and a refusal does not list them.
	HideCustom bool
	// Values, when set, is shown each value a comparison gives a search
	// attribute (the attribute, the operator as the parser spells it, the
	// value), and returns the value to send in its place, or a refusal:
	// how a caller's pseudonyms become the values they stand for.
	Values func(attribute, operator, value string) (string, error)
}

// Defaults of the query rules an operator can change.
const (
	DefaultMaxInList = 100
	DefaultMaxDepth  = 16
)

func (r QueryRules) withDefaults() QueryRules {
	if r.MaxLen <= 0 {
		r.MaxLen = MaxQueryLen
	}
	if r.MaxInList <= 0 {
		r.MaxInList = DefaultMaxInList
	}
	if r.MaxDepth <= 0 {
		r.MaxDepth = DefaultMaxDepth
	}
	if r.MaxTerms <= 0 {
		r.MaxTerms = 64
	}
	return r
}

// allowedOperators are the comparisons Temporal's visibility supports.
var allowedOperators = []string{
	sqlparser.EqualStr, sqlparser.NotEqualStr, sqlparser.LessThanStr, sqlparser.LessEqualStr,
	sqlparser.GreaterThanStr, sqlparser.GreaterEqualStr, sqlparser.InStr, sqlparser.NotInStr,
	sqlparser.StartsWithStr, sqlparser.NotStartsWithStr,
}

// ScreenedQuery is a visibility query the screen accepted.
type ScreenedQuery struct {
	// Text is the query printed back from the tree the screen approved.
	// It, and never the text the client wrote, is what porthole sends
	// Temporal: the server parses with another revision of the parser,
	// and only text printed from the screened tree is sure to mean to the
	// server what it meant to the screen.
	Text string
	// Attributes are the search attributes the query names, sorted;
	// OrderBy those its ORDER BY names.
	Attributes []string
	OrderBy    []string
}

// ScreenQuery parses a visibility query with the parser module the Temporal
// server uses (v0.1.0, a newer revision than the server's) and refuses it, with a sentence, unless it names only allowed search
// attributes within the caps. It returns the query printed back from what
// it parsed, and the attributes it names. An empty query is allowed, names
// none, and is sent empty.
func ScreenQuery(q string, rules QueryRules) (ScreenedQuery, error) {
	rules = rules.withDefaults()
	trimmed, err := checkQueryText(q, rules)
	if err != nil {
		return ScreenedQuery{}, err
	}
	if trimmed == "" {
		return ScreenedQuery{Attributes: []string{}}, nil
	}
	sel, err := parseFilter(trimmed, rules)
	if err != nil {
		return ScreenedQuery{}, err
	}
	s := &screen{rules: rules, seen: map[string]bool{}}
	if sel.Where != nil {
		if err := s.expr(sel.Where.Expr, 0); err != nil {
			return ScreenedQuery{}, err
		}
	}
	var orderBy []string
	for _, o := range sel.OrderBy {
		col, ok := o.Expr.(*sqlparser.ColName)
		if !ok {
			return ScreenedQuery{}, Refuse("ORDER BY may name only search attributes")
		}
		if err := s.column(col); err != nil {
			return ScreenedQuery{}, err
		}
		orderBy = append(orderBy, col.Name.String())
	}
	attrs := make([]string, 0, len(s.seen))
	for a := range s.seen {
		attrs = append(attrs, a)
	}
	slices.Sort(attrs)
	return ScreenedQuery{Text: printQuery(sel), Attributes: attrs, OrderBy: orderBy}, nil
}

// checkQueryText refuses a query's text before it is parsed (too long, not
// UTF-8, holding a comment marker, nested too deep), and returns it
// trimmed.
func checkQueryText(q string, rules QueryRules) (string, error) {
	if len(q) > rules.MaxLen {
		return "", Refuse("query may be at most %d bytes; it was %d", rules.MaxLen, len(q))
	}
	if !utf8.ValidString(q) {
		return "", Refuse("query is not valid UTF-8")
	}
	trimmed := strings.TrimSpace(q)
	// Security: Temporal server 1.29 reads a MySQL comment /*! ... */ as
	// SQL, while the parser here drops it as a comment: a condition inside
	// one passed the screen unseen and ran on the server (a letter-by-letter
	// oracle on custom attributes). Sending only the printed tree closes
	// that; refusing every comment marker as well keeps the text the two
	// parsers could read apart from being accepted at all.
	if marker := commentMarker(trimmed); marker != "" {
		return "", Refuse("query may not hold a comment (%s outside a quoted string); write the filter alone", marker)
	}
	// The parser's own stack is the first thing deep nesting would reach;
	// count it before parsing.
	if parenDepth(trimmed) > rules.MaxDepth {
		return "", Refuse("query nests deeper than %d levels", rules.MaxDepth)
	}
	return trimmed, nil
}

// parseFilter parses a query's text as the filter (and ORDER BY) of a
// select, and refuses any other clause.
func parseFilter(trimmed string, rules QueryRules) (*sqlparser.Select, error) {
	sql := "select * from workflows where " + trimmed
	if strings.HasPrefix(strings.ToLower(trimmed), "order by") {
		sql = "select * from workflows " + trimmed
	}
	stmt, err := sqlparser.Parse(sql)
	if err != nil {
		return nil, Refuse("query is not a visibility query porthole can parse: write comparisons of search attributes joined by AND and OR, e.g. ExecutionStatus = 'Running'")
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok {
		return nil, Refuse("query must be a filter, not a statement")
	}
	switch {
	case sel.GroupBy != nil:
		return nil, Refuse("query may not use GROUP BY")
	case sel.Having != nil, sel.Limit != nil, sel.Distinct != "", sel.Lock != "":
		return nil, Refuse("query may hold only a filter and ORDER BY")
	case len(sel.OrderBy) > 0 && rules.DisableOrderBy:
		return nil, Refuse("query may not use ORDER BY on this porthole")
	}
	return sel, nil
}

// printQuery prints a screened query back as Temporal's visibility takes it:
// the filter, then ORDER BY. The printer quotes every string literal and
// escapes ' and \ inside it, and prints no comment.
func printQuery(sel *sqlparser.Select) string {
	var b strings.Builder
	if sel.Where != nil {
		b.WriteString(sqlparser.String(sel.Where.Expr))
	}
	if len(sel.OrderBy) > 0 {
		b.WriteString(sqlparser.String(sel.OrderBy)) // " order by X asc"
	}
	return strings.TrimSpace(b.String())
}

// commentMarker returns the first comment marker (/*, */, --, //, #) in q
// outside a quoted string or identifier, or "" when there is none. Quotes
// are read as the parser's tokenizer reads them: a backslash escapes the
// next byte in '...' and "...", not in `...`. The tokenizer reads a doubled
// quote as one quote inside the string; ending the string there and starting
// another at once leaves the same bytes inside strings, so it is read so.
func commentMarker(q string) string {
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		if quote != 0 {
			switch {
			case c == '\\' && quote != '`':
				i++
			case c == quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"', '`':
			quote = c
		case '#':
			return "#"
		case '/', '*', '-':
			if i+1 < len(q) {
				if pair := q[i : i+2]; pair == "/*" || pair == "*/" || pair == "--" || pair == "//" {
					return pair
				}
			}
		}
	}
	return ""
}

// parenDepth is the deepest nesting of parentheses outside quoted strings.
func parenDepth(q string) int {
	depth, deepest := 0, 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == '\\' && quote != '`' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '(':
			depth++
			deepest = max(deepest, depth)
		case c == ')':
			depth--
		}
	}
	return deepest
}

type screen struct {
	rules QueryRules
	seen  map[string]bool
	terms int
}

// expr screens one expression of a visibility query, at depth.
//
// Whole: a switch over the SQL parser's expression types, one case each.
func (s *screen) expr(e sqlparser.Expr, depth int) error {
	if depth > s.rules.MaxDepth {
		return Refuse("query nests deeper than %d levels", s.rules.MaxDepth)
	}
	switch x := e.(type) {
	// AND and OR chains do not nest: a chain of n terms is n deep in the
	// tree but flat to a reader, and MaxTerms bounds it.
	case *sqlparser.AndExpr:
		if err := s.expr(x.Left, depth); err != nil {
			return err
		}
		return s.expr(x.Right, depth)
	case *sqlparser.OrExpr:
		if err := s.expr(x.Left, depth); err != nil {
			return err
		}
		return s.expr(x.Right, depth)
	case *sqlparser.NotExpr:
		return s.expr(x.Expr, depth+1)
	case *sqlparser.ParenExpr:
		return s.expr(x.Expr, depth+1)
	case *sqlparser.ComparisonExpr:
		if err := s.term(); err != nil {
			return err
		}
		if !slices.Contains(allowedOperators, x.Operator) {
			return Refuse("query uses the operator %q, which Temporal's visibility does not support", strings.ToUpper(x.Operator))
		}
		if err := s.attribute(x.Left); err != nil {
			return err
		}
		if err := s.value(x.Right, x.Operator == sqlparser.InStr || x.Operator == sqlparser.NotInStr); err != nil {
			return err
		}
		return s.translate(x.Left, x.Operator, x.Right)
	case *sqlparser.RangeCond:
		if err := s.term(); err != nil {
			return err
		}
		if err := s.attribute(x.Left); err != nil {
			return err
		}
		if err := s.value(x.From, false); err != nil {
			return err
		}
		if err := s.value(x.To, false); err != nil {
			return err
		}
		if err := s.translate(x.Left, x.Operator, x.From); err != nil {
			return err
		}
		return s.translate(x.Left, x.Operator, x.To)
	case *sqlparser.IsExpr:
		if err := s.term(); err != nil {
			return err
		}
		return s.attribute(x.Expr)
	}
	return Refuse("query may compare search attributes with values, joined by AND, OR and NOT; it holds %s", describe(e))
}

// translate puts, in place of each value compared with the attribute col,
// what the rules' Values make of it. The screen has checked col and the
// values.
func (s *screen) translate(col sqlparser.Expr, operator string, e sqlparser.Expr) error {
	if s.rules.Values == nil {
		return nil
	}
	name := col.(*sqlparser.ColName).Name.String()
	vals := []*sqlparser.SQLVal{}
	switch x := e.(type) {
	case *sqlparser.SQLVal:
		vals = append(vals, x)
	case sqlparser.ValTuple:
		for _, v := range x {
			vals = append(vals, v.(*sqlparser.SQLVal))
		}
	}
	for _, v := range vals {
		out, err := s.rules.Values(name, operator, string(v.Val))
		if err != nil {
			return err
		}
		v.Val = []byte(out)
	}
	return nil
}

func (s *screen) term() error {
	s.terms++
	if s.terms > s.rules.MaxTerms {
		return Refuse("query holds more than %d comparisons", s.rules.MaxTerms)
	}
	return nil
}

func (s *screen) attribute(e sqlparser.Expr) error {
	col, ok := e.(*sqlparser.ColName)
	if !ok {
		return Refuse("the left side of a comparison must be a search attribute; it is %s", describe(e))
	}
	return s.column(col)
}

func (s *screen) column(col *sqlparser.ColName) error {
	if !col.Qualifier.IsEmpty() {
		return Refuse("search attributes are named alone, without a qualifier")
	}
	name := col.Name.String()
	// Checked first: a rule set built without CheckCustomAttributes may
	// still list one of these.
	if f := forbidden(name); f != nil {
		return Refuse("query may not name %s: %s", f.name, f.why)
	}
	if AllowedInQuery(name, s.rules) {
		s.seen[name] = true
		return nil
	}
	custom := customList(s.rules.CustomAttributes)
	if s.rules.HideCustom {
		custom = ""
	}
	return Refuse("query names the search attribute %q, which is not allowed here: the allowed ones are the system attributes%s", name, custom)
}

func (s *screen) value(e sqlparser.Expr, list bool) error {
	switch x := e.(type) {
	case *sqlparser.SQLVal:
		if list {
			return Refuse("IN takes a parenthesised list of values")
		}
		return plainValue(x)
	case sqlparser.ValTuple:
		if !list {
			return Refuse("a list of values is allowed only after IN")
		}
		if len(x) > s.rules.MaxInList {
			return Refuse("an IN list may hold at most %d values; it holds %d", s.rules.MaxInList, len(x))
		}
		for _, v := range x {
			val, ok := v.(*sqlparser.SQLVal)
			if !ok {
				return Refuse("an IN list may hold only values; it holds %s", describe(v))
			}
			if err := plainValue(val); err != nil {
				return err
			}
		}
		return nil
	case *sqlparser.NullVal:
		return nil
	case sqlparser.BoolVal:
		return nil
	}
	return Refuse("a search attribute may be compared only with a value; it is compared with %s", describe(e))
}

// plainValue refuses the literals Temporal's visibility has no use for:
// hexadecimal and bit literals, and bind variables (:name, ?), which the
// printer writes back as placeholders nobody fills.
func plainValue(v *sqlparser.SQLVal) error {
	switch v.Type {
	case sqlparser.IntVal, sqlparser.FloatVal:
		return nil
	case sqlparser.StrVal:
		// A NUL in a value held the dev server's visibility read until
		// the caller's deadline: any client could hold a call for the
		// whole call timeout. No identifier Temporal takes holds a
		// control character.
		if i := slices.IndexFunc(v.Val, func(b byte) bool { return b < 0x20 || b == 0x7f }); i >= 0 {
			return Refuse("a quoted value may not hold a control character")
		}
		return nil
	}
	return Refuse("a value must be a quoted string or a number")
}

func customList(custom []string) string {
	if len(custom) == 0 {
		return " (no custom attribute is allowed)"
	}
	return " and " + strings.Join(custom, ", ")
}

// describe names an expression's kind for a refusal, without echoing it.
func describe(e sqlparser.Expr) string {
	switch e.(type) {
	case *sqlparser.FuncExpr:
		return "a function call"
	case *sqlparser.Subquery:
		return "a subquery"
	case *sqlparser.ColName:
		return "a search attribute"
	case *sqlparser.BinaryExpr, *sqlparser.UnaryExpr:
		return "arithmetic"
	case *sqlparser.ExistsExpr:
		return "EXISTS"
	case *sqlparser.CaseExpr:
		return "CASE"
	}
	return "an expression of another kind"
}

// attributeClasses are the classes of field the values of system
// attributes are: a query comparing one asks about values of that class,
// which a caller whose profile withholds the class may not do. Custom
// attributes have no class: their values are never shown, and the operator
// allows each by name (queryAttributes).
var attributeClasses = map[string]read.Class{
	"WorkflowId": read.ClassWorkflowID, "ParentWorkflowId": read.ClassWorkflowID, "RootWorkflowId": read.ClassWorkflowID,
	"RunId": read.ClassRunID, "ParentRunId": read.ClassRunID, "RootRunId": read.ClassRunID,
	"WorkflowType": read.ClassTypeName, "TaskQueue": read.ClassTaskQueue,
	"TemporalScheduledById": read.ClassScheduleID,
	"BuildIds":              read.ClassDeployment, "TemporalWorkerDeployment": read.ClassDeployment, "TemporalWorkerDeploymentVersion": read.ClassDeployment,
}

// AttributeClass is the class of field a system attribute's values are,
// or "" for an attribute that has none.
func AttributeClass(name string) read.Class { return attributeClasses[name] }

// WithheldInQuery is the first attribute of attrs (ScreenedQuery's) whose
// values are of a class in withhold, and that class; "" when none is.
func WithheldInQuery(attrs []string, withhold read.ClassSet) (string, read.Class) {
	for _, a := range attrs {
		if c, ok := attributeClasses[a]; ok && withhold.Has(c) {
			return a, c
		}
	}
	return "", ""
}
