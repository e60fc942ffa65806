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
	// The rules list TemporalNamespaceDivision as a gateway built without
	// CheckCustomAttributes might: the screen refuses it all the same.
	rules := QueryRules{CustomAttributes: []string{"CustomerTier", "TemporalNamespaceDivision"}}
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

		// Security: the server's parser reads /*! ... */ as SQL; the
		// screen's read it as a comment and let a hidden condition through.
		{"a condition in a MySQL comment (advisory: /*! smuggling)", "WorkflowId = 'a' /*! OR SecretEmail STARTS_WITH 'c' */", nil, "comment (/*"},
		{"a versioned MySQL comment", "WorkflowId = 'a' /*!50000 OR SecretEmail STARTS_WITH 'c' */", nil, "comment (/*"},
		{"hidden workflows in a MySQL comment", "WorkflowId = 'a' /*! OR TemporalNamespaceDivision IS NOT NULL */", nil, "comment (/*"},
		{"a plain block comment", "WorkflowId = 'a' /* note */", nil, "comment (/*"},
		{"a comment's end alone", "WorkflowId = 'a' */", nil, "comment (*/"},
		{"a dash comment", "WorkflowId = 'a' -- OR 1", nil, "comment (--"},
		{"a dash comment without a space", "WorkflowId = 'a'--x", nil, "comment (--"},
		{"a hash comment", "WorkflowId = 'a' # OR 1", nil, "comment (#"},
		{"a slash comment", "WorkflowId = 'a' // OR 1", nil, "comment (//"},
		{"a NUL in a value", "WorkflowId = 'a\x00b'", nil, "control character"},
		{"an escaped NUL in a value", `WorkflowId = 'a\0b'`, nil, "control character"},
		{"a newline in a value", "WorkflowId = 'a\nb'", nil, "control character"},
		{"an attribute in another case", "executionstatus = 'Running'", nil, `"executionstatus", which is not allowed`},
		{"a comment after an escaped quote", `WorkflowId = 'a\'' /*! OR SecretEmail STARTS_WITH 'c' */`, nil, "comment (/*"},
		{"a comment after a backtick name", "`WorkflowId` = 'a' /*! x */", nil, "comment (/*"},
		{"Memo in another case", "memo = 'x'", nil, "may not name Memo"},
		{"TemporalNamespaceDivision even when listed", "TemporalNamespaceDivision = 'x'", nil, "may not name TemporalNamespaceDivision"},
		{"a bind variable", "WorkflowId = :v1", nil, "quoted string or a number"},
		{"a placeholder in an IN list", "WorkflowId IN ('a', ?)", nil, "quoted string or a number"},
		{"a hex literal", "WorkflowId = 0x61", nil, "quoted string or a number"},
		{"a bit literal", "WorkflowId = b'1'", nil, "quoted string or a number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ScreenQuery(tc.q, rules)
			if tc.refused != "" {
				if !errors.Is(err, ErrOutOfBounds) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("ScreenQuery = %+v, %v; want a refusal containing %q", got, err, tc.refused)
				}
				return
			}
			if err != nil || !slices.Equal(got.Attributes, tc.attrs) {
				t.Fatalf("ScreenQuery = %+v, %v; want %v", got, err, tc.attrs)
			}
		})
	}
}

// TestScreenedQueryIsPrintedFromTheTree: what porthole sends Temporal is
// the parsed query printed back, never the client's text.
func TestScreenedQueryIsPrintedFromTheTree(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, q, sent string }{
		{"an empty query", "  ", ""},
		{"a status filter", "ExecutionStatus='Running'", "ExecutionStatus = 'Running'"},
		{"STARTS_WITH in lower case", "WorkflowId starts_with 'order-'", "WorkflowId starts_with 'order-'"},
		{"a quote doubled", "WorkflowId = 'it''s'", `WorkflowId = 'it\'s'`},
		{"a quote escaped", `WorkflowId = 'it\'s'`, `WorkflowId = 'it\'s'`},
		{"a backslash", `WorkflowId = 'a\\b'`, `WorkflowId = 'a\\b'`},
		{"a double-quoted string", `WorkflowId = "a'b"`, `WorkflowId = 'a\'b'`},
		{"a comment marker inside a string", "WorkflowId = 'a /*! OR 1 */ -- #'", "WorkflowId = 'a /*! OR 1 */ -- #'"},
		{"a backtick name", "`WorkflowId` = 'a'", "WorkflowId = 'a'"},
		{"an IN list", "ExecutionStatus IN ('Failed','TimedOut')", "ExecutionStatus in ('Failed', 'TimedOut')"},
		{"BETWEEN", "CloseTime BETWEEN '2026-01-01' AND '2026-02-01'", "CloseTime between '2026-01-01' and '2026-02-01'"},
		{"NOT and IS NULL", "NOT (CloseTime IS NULL)", "not (CloseTime is null)"},
		{"numbers", "HistoryLength >= -1 AND HistorySizeBytes < 1.5", "HistoryLength >= -1 and HistorySizeBytes < 1.5"},
		{"ORDER BY", "WorkflowType = 'a' ORDER BY StartTime DESC", "WorkflowType = 'a' order by StartTime desc"},
		{"ORDER BY alone", "order by StartTime", "order by StartTime asc"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ScreenQuery(tc.q, QueryRules{})
			if err != nil || got.Text != tc.sent {
				t.Fatalf("ScreenQuery(%q) sends %q, %v; want %q", tc.q, got.Text, err, tc.sent)
			}
			again, err := ScreenQuery(got.Text, QueryRules{})
			if err != nil || again.Text != got.Text {
				t.Fatalf("the sent text %q screens again to %q, %v; want it unchanged", got.Text, again.Text, err)
			}
		})
	}
}

func TestConfigurationCannotAllowMemoOrTheNamespaceDivision(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Memo", "memo", "TemporalNamespaceDivision", "temporalnamespacedivision"} {
		err := CheckCustomAttributes([]string{"CustomerTier", name})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), name) {
			t.Errorf("CheckCustomAttributes(%q) = %v; want a refusal naming it", name, err)
		}
		_, err = ParseFile([]byte(`{"principals": {"a": {"tools": ["*"]}}, "queryAttributes": ["` + name + `"]}`))
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "queryAttributes") {
			t.Errorf("a policy file listing %q: %v; want a refusal naming it", name, err)
		}
	}
	if err := CheckCustomAttributes([]string{"CustomerTier", "MemoLine"}); err != nil {
		t.Errorf("an ordinary custom attribute was refused: %v", err)
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
		got, err := ScreenQuery(q, QueryRules{})
		attrs := got.Attributes
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
		// Printing may lengthen a query (spaces around operators, "asc",
		// escapes): the length cap is on the client's text.
		got2, err := ScreenQuery(again, QueryRules{MaxLen: 2 * MaxQueryLen})
		if err != nil || !slices.Equal(attrs, got2.Attributes) {
			t.Fatalf("%q screens to %v, but printed back as %q it screens to %v, %v", q, attrs, again, got2.Attributes, err)
		}
		if got.Text != strings.TrimSpace(again) {
			t.Fatalf("%q is sent as %q, not as its tree prints: %q", q, got.Text, again)
		}
	})
}
