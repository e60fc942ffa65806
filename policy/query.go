package policy

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/temporalio/sqlparser"
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

// refusedAttributes are never allowed, whatever the operator lists.
// TemporalNamespaceDivision partitions namespaces internally: a query on it
// reaches workflows the namespace's own listing hides (the schedulers, the
// batch operations).
var refusedAttributes = []string{"TemporalNamespaceDivision"}

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

// ScreenQuery parses a visibility query with the parser the Temporal server
// uses and refuses it, with a sentence, unless it names only allowed search
// attributes within the caps. It returns the attributes the query names,
// sorted. An empty query is allowed and names none.
func ScreenQuery(q string, rules QueryRules) ([]string, error) {
	rules = rules.withDefaults()
	if len(q) > rules.MaxLen {
		return nil, Refuse("query may be at most %d bytes; it was %d", rules.MaxLen, len(q))
	}
	if !utf8.ValidString(q) {
		return nil, Refuse("query is not valid UTF-8")
	}
	trimmed := strings.TrimSpace(q)
	if trimmed == "" {
		return []string{}, nil
	}
	// The parser's own stack is the first thing deep nesting would reach;
	// count it before parsing.
	if parenDepth(trimmed) > rules.MaxDepth {
		return nil, Refuse("query nests deeper than %d levels", rules.MaxDepth)
	}
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
	s := &screen{rules: rules, seen: map[string]bool{}}
	if sel.Where != nil {
		if err := s.expr(sel.Where.Expr, 0); err != nil {
			return nil, err
		}
	}
	for _, o := range sel.OrderBy {
		col, ok := o.Expr.(*sqlparser.ColName)
		if !ok {
			return nil, Refuse("ORDER BY may name only search attributes")
		}
		if err := s.column(col); err != nil {
			return nil, err
		}
	}
	attrs := make([]string, 0, len(s.seen))
	for a := range s.seen {
		attrs = append(attrs, a)
	}
	slices.Sort(attrs)
	return attrs, nil
}

// parenDepth is the deepest nesting of parentheses outside quoted strings.
func parenDepth(q string) int {
	depth, deepest := 0, 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == '\\' {
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
		return s.value(x.Right, x.Operator == sqlparser.InStr || x.Operator == sqlparser.NotInStr)
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
		return s.value(x.To, false)
	case *sqlparser.IsExpr:
		if err := s.term(); err != nil {
			return err
		}
		return s.attribute(x.Expr)
	}
	return Refuse("query may compare search attributes with values, joined by AND, OR and NOT; it holds %s", describe(e))
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
	switch {
	case slices.Contains(refusedAttributes, name):
		return Refuse("query may not name %s", name)
	case slices.Contains(SystemAttributes, name), slices.Contains(s.rules.CustomAttributes, name):
		s.seen[name] = true
		return nil
	case strings.EqualFold(name, "Memo"):
		return Refuse("query may not name Memo: memo is user data, and porthole does not search it")
	}
	return Refuse("query names the search attribute %q, which is not allowed here: the allowed ones are the system attributes%s", name, customList(s.rules.CustomAttributes))
}

func (s *screen) value(e sqlparser.Expr, list bool) error {
	switch x := e.(type) {
	case *sqlparser.SQLVal:
		if list {
			return Refuse("IN takes a parenthesised list of values")
		}
		return nil
	case sqlparser.ValTuple:
		if !list {
			return Refuse("a list of values is allowed only after IN")
		}
		if len(x) > s.rules.MaxInList {
			return Refuse("an IN list may hold at most %d values; it holds %d", s.rules.MaxInList, len(x))
		}
		for _, v := range x {
			if _, ok := v.(*sqlparser.SQLVal); !ok {
				return Refuse("an IN list may hold only values; it holds %s", describe(v))
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
