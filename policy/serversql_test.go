package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/temporalio/sqlparser"

	"github.com/porthole-dev/porthole/policy/internal/serversql"
)

// token is one token as a tokenizer scans it. The token numbers of the two
// revisions are the same constants (both generated from one list of
// tokens), so they compare directly.
type token struct {
	typ int
	val string
}

// scanAll runs a tokenizer's Scan to the end. A lexical error ends the
// stream with that token; the loop is bounded, since every token consumes at
// least one byte.
func scanAll(sql string, scan func() (int, []byte)) []token {
	var out []token
	for range len(sql) + 2 {
		typ, val := scan()
		if typ == 0 {
			break
		}
		out = append(out, token{typ, string(val)})
		if typ == sqlparser.LEX_ERROR {
			break
		}
	}
	return out
}

func screenTokens(sql string) []token {
	return scanAll(sql, sqlparser.NewStringTokenizer(sql).Scan)
}

func serverTokens(sql string) []token {
	return scanAll(sql, serversql.NewStringTokenizer(sql).Scan)
}

// asServerWraps is the statement Temporal server 1.29's SQL visibility
// builds around a query before it parses it.
func asServerWraps(q string) string {
	q = strings.TrimSpace(q)
	lower := strings.ToLower(q)
	if q != "" && !strings.HasPrefix(lower, "order by") && !strings.HasPrefix(lower, "group by") {
		q = "where " + q
	}
	return "select * from table1 " + q
}

// asScreenWraps is the statement ScreenQuery parses.
func asScreenWraps(q string) string {
	q = strings.TrimSpace(q)
	if strings.HasPrefix(strings.ToLower(q), "order by") {
		return "select * from workflows " + q
	}
	return "select * from workflows where " + q
}

func hasComment(toks []token) bool {
	return slices.ContainsFunc(toks, func(t token) bool { return t.typ == sqlparser.COMMENT })
}

// TestTheServerReadsMySQLCommentsAsSQL shows that the differential check
// below can fail: the query the adversarial review used tokenizes apart
// under the two revisions.
func TestTheServerReadsMySQLCommentsAsSQL(t *testing.T) {
	t.Parallel()
	q := asServerWraps("WorkflowId = 'a' /*! OR SecretEmail STARTS_WITH 'c' */")
	screen, server := screenTokens(q), serverTokens(q)
	if slices.Equal(screen, server) || !hasComment(screen) || hasComment(server) {
		t.Fatalf("the two tokenizers agree on a MySQL comment:\nscreen %v\nserver %v", screen, server)
	}
	if !slices.Contains(server, token{sqlparser.ID, "SecretEmail"}) {
		t.Fatalf("the server's tokenizer did not read the comment's contents: %v", server)
	}
}

// FuzzScreenAgreesWithServerTokenizer: every query the screen accepts is
// tokenized alike, with no comment, by the screen's parser and by the
// server's; so is the text porthole sends in its place, as the server wraps
// it. The sent text screens again to itself.
func FuzzScreenAgreesWithServerTokenizer(f *testing.F) {
	for _, q := range []string{
		"", "ExecutionStatus = 'Running'", "WorkflowId = 'a' /*! OR SecretEmail STARTS_WITH 'c' */",
		"WorkflowId = 'a' /*!50000 OR SecretEmail STARTS_WITH 'c' */", "WorkflowId = 'a /*! x */'",
		`WorkflowId = 'it\'s' AND RunId = "x\"y"`, "`WorkflowId` = 'a' -- x", "WorkflowId = 'a' # x",
		"ExecutionStatus IN ('Failed', 'TimedOut') ORDER BY StartTime DESC", "ORDER BY CloseTime",
		"CloseTime BETWEEN '2026-01-01' AND '2026-02-01'", "NOT (CloseTime IS NULL) AND HistoryLength > -1",
		"CustomerTier starts_with 'g'", "WorkflowId = 'a\\\\' /*! OR 1 */ '", "WorkflowId=''//",
	} {
		f.Add(q)
	}
	rules := QueryRules{CustomAttributes: []string{"CustomerTier"}}
	f.Fuzz(func(t *testing.T, q string) {
		got, err := ScreenQuery(q, rules)
		if err != nil {
			return
		}
		if strings.TrimSpace(q) != "" {
			parsed := asScreenWraps(q)
			screen, server := screenTokens(parsed), serverTokens(parsed)
			if !slices.Equal(screen, server) {
				t.Fatalf("accepted %q, which the tokenizers read apart:\nscreen %v\nserver %v", q, screen, server)
			}
			if hasComment(screen) {
				t.Fatalf("accepted %q, which holds a comment: %v", q, screen)
			}
		}
		sent := asServerWraps(got.Text)
		screen, server := screenTokens(sent), serverTokens(sent)
		if !slices.Equal(screen, server) {
			t.Fatalf("%q is sent as %q, which the tokenizers read apart:\nscreen %v\nserver %v", q, got.Text, screen, server)
		}
		if hasComment(server) {
			t.Fatalf("%q is sent as %q, which holds a comment: %v", q, got.Text, server)
		}
		// Printing may lengthen a query: the length cap is on the client's
		// text, so the sent text is screened again without it.
		again, err := ScreenQuery(got.Text, QueryRules{CustomAttributes: rules.CustomAttributes, MaxLen: 2 * MaxQueryLen})
		if err != nil || again.Text != got.Text || !slices.Equal(again.Attributes, got.Attributes) {
			t.Fatalf("%q is sent as %q, which screens again to %+v, %v", q, got.Text, again, err)
		}
	})
}
