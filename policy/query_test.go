package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/temporalio/sqlparser"
)

func TestScreenQuery(t *testing.T) {
	t.Parallel()
	rules := QueryRules{CustomAttributes: []string{"CustomerTier"}}
	cases := []struct {
		name    string
		q       string
		attrs   []string
		refused string
	}{
		{"an empty query", "", []string{}, ""},
		{"a status filter", "ExecutionStatus = 'Running'", []string{"ExecutionStatus"}, ""},
		{"types and times", "WorkflowType = 'Order' AND StartTime > '2026-01-01T00:00:00Z' ORDER BY StartTime DESC", []string{"StartTime", "WorkflowType"}, ""},
		{"an IN list", "ExecutionStatus IN ('Failed', 'TimedOut')", []string{"ExecutionStatus"}, ""},
		{"BETWEEN", "CloseTime BETWEEN '2026-01-01' AND '2026-02-01'", []string{"CloseTime"}, ""},
		{"STARTS_WITH on a workflow id", "WorkflowId STARTS_WITH 'order-'", []string{"WorkflowId"}, ""},
		{"IS NULL", "CloseTime IS NULL", []string{"CloseTime"}, ""},
		{"an allowed custom attribute", "CustomerTier = 'gold'", []string{"CustomerTier"}, ""},
		{"ORDER BY alone", "ORDER BY StartTime", []string{"StartTime"}, ""},
		{"NOT and parentheses", "NOT (ExecutionStatus = 'Running' OR TaskQueue = 'q')", []string{"ExecutionStatus", "TaskQueue"}, ""},

		{"STARTS_WITH probing of a custom attribute", "CustomerEmail STARTS_WITH 'a'", nil, `"CustomerEmail", which is not allowed`},
		{"a custom attribute hidden in ORDER BY", "ExecutionStatus = 'Running' ORDER BY CustomerEmail", nil, `"CustomerEmail"`},
		{"TemporalNamespaceDivision", "TemporalNamespaceDivision = 'TemporalScheduler'", nil, "may not name TemporalNamespaceDivision"},
		{"Memo", "Memo = 'x'", nil, "Memo"},
		{"a 20,000-way OR", strings.Repeat("WorkflowId = 'a' OR ", 20000) + "WorkflowId = 'b'", nil, "at most 2048 bytes"},
		{"a 100-way OR under the length cap", strings.Repeat("RunId='a' OR ", 100) + "RunId='b'", nil, "more than 64 comparisons"},
		{"200 nested parentheses", strings.Repeat("(", 200) + "WorkflowId = 'a'" + strings.Repeat(")", 200), nil, "nests deeper"},
		{"a huge IN list", "WorkflowId IN (" + strings.Repeat("'a',", 150) + "'b')", nil, "at most 100 values"},
		{"; DROP", "WorkflowId = 'a'; DROP TABLE executions", nil, "not a visibility query"},
		{"a subquery", "WorkflowId IN (SELECT x FROM y)", nil, "subquery"},
		{"a function", "WorkflowId = concat('a', 'b')", nil, "only with a value"},
		{"column against column", "WorkflowId = RunId", nil, "only with a value"},
		{"LIKE", "WorkflowId LIKE 'a%'", nil, "LIKE"},
		{"GROUP BY", "ExecutionStatus = 'Running' GROUP BY ExecutionStatus", nil, "GROUP BY"},
		{"LIMIT", "WorkflowId = 'a' LIMIT 5", nil, "only a filter"},
		{"a qualified name", "w.WorkflowId = 'a'", nil, "qualifier"},
		{"a bare value", "'a'", nil, "compare search attributes"},
		{"invalid UTF-8", "WorkflowId = '\xff'", nil, "UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			attrs, err := ScreenQuery(tc.q, rules)
			if tc.refused != "" {
				if !errors.Is(err, ErrOutOfBounds) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("ScreenQuery = %v, %v; want a refusal containing %q", attrs, err, tc.refused)
				}
				return
			}
			if err != nil || !slices.Equal(attrs, tc.attrs) {
				t.Fatalf("ScreenQuery = %v, %v; want %v", attrs, err, tc.attrs)
			}
		})
	}
}

func TestOrderByCanBeDisabled(t *testing.T) {
	t.Parallel()
	if _, err := ScreenQuery("WorkflowType = 'a' ORDER BY StartTime", QueryRules{DisableOrderBy: true}); err == nil || !strings.Contains(err.Error(), "ORDER BY") {
		t.Fatalf("ORDER BY with it disabled: %v", err)
	}
}

// FuzzScreenQuery: the screen never panics, and a query it accepts, printed
// back by the parser and screened again, names the same attributes: what
// the screen approved is what Temporal will be asked.
func FuzzScreenQuery(f *testing.F) {
	for _, q := range []string{"", "ExecutionStatus = 'Running'", "WorkflowId STARTS_WITH 'a' AND (TaskQueue = 'q' OR RunId IN ('x','y'))", "ORDER BY StartTime", "CloseTime IS NOT NULL", "a = 1; drop", "((("} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		attrs, err := ScreenQuery(q, QueryRules{})
		if err != nil {
			if !errors.Is(err, ErrOutOfBounds) {
				t.Fatalf("a refusal that is not a sentence: %v", err)
			}
			return
		}
		if strings.TrimSpace(q) == "" {
			return
		}
		sql := "select * from workflows where " + strings.TrimSpace(q)
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(q)), "order by") {
			sql = "select * from workflows " + strings.TrimSpace(q)
		}
		stmt, err := sqlparser.Parse(sql)
		if err != nil {
			t.Fatalf("accepted %q but it does not parse: %v", q, err)
		}
		sel := stmt.(*sqlparser.Select)
		var again string
		if sel.Where != nil {
			again = sqlparser.String(sel.Where.Expr)
		}
		if len(sel.OrderBy) > 0 {
			again += sqlparser.String(sel.OrderBy)
		}
		attrs2, err := ScreenQuery(again, QueryRules{})
		if err != nil || !slices.Equal(attrs, attrs2) {
			t.Fatalf("%q screens to %v, but printed back as %q it screens to %v, %v", q, attrs, again, attrs2, err)
		}
	})
}
