package review

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
)

// pageOf writes s's page.
func pageOf(t testing.TB, s *Summary) string {
	t.Helper()
	var b bytes.Buffer
	if err := s.WriteHTML(&b, PageInputs{LogFiles: []string{"audit.log"}, Generated: reportStart, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// pageTags are the elements a page is made of. Every value is escaped, so
// any other tag would be one a value planted.
var pageTags = []string{"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "div", "ul", "li", "dl", "dt", "dd",
	"b", "code", "span", "br", "table", "thead", "tbody", "tr", "th", "td", "figure", "figcaption", "svg", "line", "rect", "text"}

var (
	tagRE = regexp.MustCompile(`<[^>]*>`)
	// bidi and other invisible controls a value could reorder a page with.
	invisibleRE = regexp.MustCompile("[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
)

// pageProblems lists what a page must never hold: a tag that is not the
// page's own, an event handler, a style attribute, a reference to anything
// outside the page, an invisible control character; and a style sheet its
// Content-Security-Policy would refuse.
func pageProblems(page string) []string {
	var out []string
	for _, tag := range tagRE.FindAllString(page, -1) {
		name := strings.ToLower(strings.TrimLeft(strings.Fields(strings.Trim(tag, "<>/"))[0], "/!"))
		lower := strings.ToLower(tag)
		switch {
		case name == "doctype":
		case !slices.Contains(pageTags, name):
			out = append(out, "a tag that is not the page's own: "+tag)
		case regexp.MustCompile(`\son[a-z]*\s*=`).MatchString(lower), strings.Contains(lower, " style="),
			strings.Contains(lower, "href="), strings.Contains(lower, "src="), strings.Contains(lower, "url("):
			out = append(out, "an attribute that runs or fetches something: "+tag)
		}
	}
	if m := invisibleRE.FindString(page); m != "" {
		out = append(out, fmt.Sprintf("an invisible control character %q", m))
	}
	styles := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindAllStringSubmatch(page, -1)
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(page)
	if len(styles) != 1 || csp == nil {
		return append(out, fmt.Sprintf("%d style elements and CSP %q: want one of each", len(styles), csp))
	}
	sum := sha256.Sum256([]byte(styles[0][1]))
	want := "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "';"
	if policy := html.UnescapeString(csp[1]); !strings.HasPrefix(policy, want) {
		out = append(out, fmt.Sprintf("the Content-Security-Policy %q does not begin %q, the hash of the style sheet", policy, want))
	}
	return out
}

// hostile are values a client could send, each planted in every field it
// can reach.
var hostile = []string{
	`<script>window.pwned=1</script>`,
	`"><img src=x onerror=alert(1)>`,
	"order-\u202e321-redro",
	"'; background:url(https://example.invalid/beacon)",
}

// TestAPageShowsHostileValuesAsText: names, tools, argument names and
// values (and the real values a call's pseudonyms stood for) and denial
// reasons that hold markup, bidi overrides and 100 KB are shown as escaped
// text, bounded, and the page stays the page's own.
func TestAPageShowsHostileValuesAsText(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	var records []audit.Record
	for i, h := range hostile {
		id := fmt.Sprint("h", i)
		c := call(id, h, h, audit.Arg{Name: h, Value: h}, audit.Arg{Name: "workflowId", Value: h})
		c.UserAgent = h
		r := result(id, h, h, audit.OutcomeOK)
		r.Profile, r.Opened = "vendor", []audit.Arg{{Name: "workflowId", Value: h}}
		records = append(records, c, r,
			audit.Record{Kind: audit.KindDenial, ClientAddr: "203.0.113.9", Outcome: audit.OutcomeInvalid, Status: 400, Reason: "a refused key " + h})
	}
	big := strings.Repeat("x", 100<<10)
	records = append(records, call("big", "alice", "describe_workflow", audit.Arg{Name: "workflowId", Value: big}),
		result("big", "alice", "describe_workflow", audit.OutcomeInvalid))
	writeRecords(t, openReportLog(t, path, audit.Config{}), records...)
	opts := keyed()
	opts.Detail = true
	page := pageOf(t, report(t, []string{path}, Filter{}, opts))

	for _, p := range pageProblems(page) {
		t.Error(p)
	}
	for _, h := range hostile {
		if strings.Contains(page, h) {
			t.Errorf("the page holds %q as it was sent", h)
		}
	}
	for _, want := range []string{`&lt;script&gt;window.pwned=1&lt;/script&gt;`, `order-\u202e321-redro`, `(the first 256 of 4096 bytes)`, `(cut when recorded)`,
		`<span class="note">stood for</span> <code>workflowId</code>=<code>&#34;order-\u202e321-redro&#34;</code>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if len(page) > 120<<10 || strings.Contains(page, strings.Repeat("x", 257)) {
		t.Errorf("a 100 KB argument made a page of %d bytes, or was shown past 256 bytes", len(page))
	}
}

// FuzzAPageIsThePagesOwn: whatever a name, tool, argument or reason
// holds, the page holds only its own tags and attributes, no invisible
// control character, and its style sheet's hash.
func FuzzAPageIsThePagesOwn(f *testing.F) {
	for _, h := range hostile {
		f.Add(h)
	}
	f.Add("\x00\xff\u2066</style><style>")
	f.Fuzz(func(t *testing.T, v string) {
		row := &Row{Time: reportStart, Kind: audit.KindCall, Principal: v, ClientAddr: v, Tool: v, Reason: v, Outcome: audit.Outcome(v), Count: 1,
			Args: []RowArg{{Name: v, Value: cutText(v, rowValueBytes), Bytes: len(v)}}}
		tl := newTimeline()
		b := tl.bucket(reportStart)
		b.Calls[v], b.Outcomes[audit.Outcome(v)] = 1, 1
		vf := &Verification{Files: []string{v}, Keyed: true, Chain: v, Notes: []string{v}}
		s := &Summary{Verified: true, Series: []*Series{{Verification: vf, Basis: vf.Basis()}},
			Filter: Filter{Principal: v, Args: []ArgFilter{{Name: v, Value: v}}}, Records: 2, From: reportStart, To: reportStart,
			Principals: []*PrincipalSummary{{Principal: v, Calls: 1, Tools: []*ToolSummary{{Tool: v, Calls: 1, Outcomes: map[audit.Outcome]int{audit.Outcome(v): 1}}}}},
			Denials:    []*DenialSummary{{Outcome: audit.Outcome(v), Reason: v, ClientAddr: v, Count: 1}},
			Detail:     &Detail{Timeline: tl.done(), Rows: []*Row{row}}}
		var page bytes.Buffer
		if err := s.WriteHTML(&page, PageInputs{LogFiles: []string{v}, Evidence: []string{v}, Version: v}); err != nil {
			t.Fatal(err)
		}
		if problems := pageProblems(page.String()); len(problems) > 0 {
			t.Fatalf("%q: %v", v, problems)
		}
	})
}

// threePrincipals writes a trail of three principals' calls with mixed
// outcomes, one from the day before, and denials: some one by one, and a
// summary of more.
func threePrincipals(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	var records []audit.Record
	for i := range 12 {
		p := []string{"alice", "bob", "ci-agent"}[i%3]
		tool := []string{"list_workflows", "describe_workflow"}[i%2]
		o := []audit.Outcome{audit.OutcomeOK, audit.OutcomeOK, audit.OutcomeDenied, audit.OutcomeInvalid}[i%4]
		id := fmt.Sprint("r", i)
		records = append(records, call(id, p, tool, audit.Arg{Name: "workflowId", Value: fmt.Sprint("order-", i)}), result(id, p, tool, o))
	}
	records = append(records,
		audit.Record{Kind: audit.KindDenial, ClientAddr: "203.0.113.9", Outcome: audit.OutcomeUnauthenticated, Status: 401, Reason: "unknown token"},
		audit.Record{Kind: audit.KindDenial, Principal: "bob", ClientAddr: "198.51.100.7", Outcome: audit.OutcomeRateLimited, Status: 429, Reason: "rate limit"},
		audit.Record{Kind: audit.KindDenials, ClientAddr: "203.0.113.9", Count: 40, First: reportStart, Last: reportStart.Add(time.Hour),
			Groups: []audit.DenialGroup{{Count: 30, Outcome: audit.OutcomeUnauthenticated, Status: 401, Reason: "unknown token"}, {Count: 10, Outcome: audit.OutcomeInvalid, Status: 400, Reason: "not JSON"}}})
	writeRecords(t, openReportLog(t, path, audit.Config{}), records...)
	return path
}

// TestAPageCountsWhatTheTableCounts: the page is another rendering of the
// same summary: its principal rows, its tool rows and its denial rows are
// the text report's, and its charts add up to the same totals.
func TestAPageCountsWhatTheTableCounts(t *testing.T) {
	t.Parallel()
	path := threePrincipals(t)
	opts := keyed()
	opts.Detail = true
	s := report(t, []string{path}, Filter{}, opts)
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	page := pageOf(t, s)
	var pageRows [][]string
	for _, row := range regexp.MustCompile(`<tr>.*?</tr>`).FindAllString(page, -1) {
		var cells []string
		for _, c := range regexp.MustCompile(`<t[dh][^>]*>(.*?)</t[dh]>`).FindAllStringSubmatch(row, -1) {
			cells = append(cells, html.UnescapeString(c[1]))
		}
		pageRows = append(pageRows, cells)
	}
	// Each row of the text report's tables is a row of the page's, or (of
	// the principals) one without the page's column of tools.
	compared := 0
	for _, section := range strings.Split(table.String(), "\n\n")[2:] {
		for _, line := range strings.Split(strings.TrimSpace(section), "\n")[2:] {
			cols := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
			found := slices.ContainsFunc(pageRows, func(cells []string) bool {
				return slices.Equal(cells, cols) || len(cells) == 6 && slices.Equal(slices.Delete(slices.Clone(cells), 3, 4), cols)
			})
			if compared++; !found {
				t.Errorf("the text report's row %q is not on the page", line)
			}
		}
	}
	if compared != 3+6+3 {
		t.Errorf("compared %d rows of the text report, want its 3 principals, 6 principal and tool rows and 3 denial rows", compared)
	}
	calls := 0
	for _, b := range s.Detail.Timeline.Buckets {
		for _, n := range b.Calls {
			calls += n
		}
	}
	if calls != 12 || !strings.Contains(page, "<b>12</b>calls") || !strings.Contains(page, "<b>42</b>denials") || !strings.Contains(page, "<b>3</b>principals") {
		t.Errorf("the timeline counts %d calls, want 12; the page's totals:\n%s", calls, regexp.MustCompile(`(?s)<div class="totals">.*?</div>\n</div>`).FindString(page))
	}
	for _, id := range []string{"calls-over-time", "outcomes-over-time", "top-tools", "denials-by-reason", "denials-by-address"} {
		if !strings.Contains(page, `aria-labelledby="`+id+`-title"`) {
			t.Errorf("the page has no chart %s", id)
		}
	}
	if len(s.Detail.Rows) != 15 || s.Detail.RowsLeftOut != 0 || s.Detail.Rows[0].Outcome != audit.OutcomeOK || s.Detail.Rows[14].Count != 40 {
		t.Errorf("rows: %d (%d left out), want the 12 calls with their outcomes, 2 denials and a summary of 40", len(s.Detail.Rows), s.Detail.RowsLeftOut)
	}
}

// TestAPageSaysWhatTheVerificationEstablished: the verdict in words, from
// a proof by checkpoints down to a page of files that did not verify.
func TestAPageSaysWhatTheVerificationEstablished(t *testing.T) {
	t.Parallel()
	proven, proof := provenTrail(t)
	edited := editedPrincipalLog(t)
	for _, c := range []struct {
		name  string
		path  string
		opts  ReportOptions
		class string
		want  []string
	}{
		{"by the HMAC key and the checkpoints", proven, proof, "good", []string{"Verified: ", "HMACs checked", "complete and unchanged from seq 1 to"}},
		{"by the HMAC key alone", proven, keyed(), "partial", []string{"Verified: ", "HMACs checked", "NOT proven complete: no checkpoints were checked", "unverified: 0"}},
		{"by its links alone", proven, ReportOptions{}, "bad", []string{"NOT verified, links only", "HMACs NOT checked"}},
		{"not at all", edited, ReportOptions{VerifyOptions: keyed().VerifyOptions, Unverified: true}, "bad",
			[]string{"<title>NOT VERIFIED: ", "NOT VERIFIED: ", "HMAC does not match", "series 1: BROKEN: ", "unverified: 1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Detail = true
			s := report(t, []string{c.path}, Filter{}, c.opts)
			// The JSON's linksOnly is true exactly where the links alone
			// were checked.
			if wantLinks := c.name == "by its links alone"; s.LinksOnly != wantLinks {
				t.Errorf("linksOnly %t, want %t", s.LinksOnly, wantLinks)
			}
			page := pageOf(t, s)
			verdict := regexp.MustCompile(`(?s)<div class="verdict (\w+)" id="verdict">(.*?)</div>`).FindStringSubmatch(page)
			if verdict == nil || verdict[1] != c.class {
				t.Fatalf("verdict %q, want class %s", verdict, c.class)
			}
			for _, w := range c.want {
				if !strings.Contains(page, w) {
					t.Errorf("the page lacks %q:\n%s", w, verdict[0])
				}
			}
			// A red verdict, links only as well as --unverified, has its
			// red line at the top, above each section and at the end.
			warnings := strings.Count(page, `<p class="warning">NOT `)
			if c.class == "bad" && warnings < 6 || c.class != "bad" && warnings != 0 {
				t.Errorf("%d warnings; want one at the top, the bottom and above each section of a red page, none on another", warnings)
			}
		})
	}
}

// TestAPageKeepsTheEarliestRowsAndSaysHowManyItLeftOut: past MaxRows, the
// page holds the earliest records (of several series, read one after the
// other) and counts the rest, with how to narrow the report.
func TestAPageKeepsTheEarliestRowsAndSaysHowManyItLeftOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	late, early := filepath.Join(dir, "late.log"), filepath.Join(dir, "early.log")
	writeRecords(t, openReportLog(t, late, audit.Config{}), calls("l", "late", "list_workflows", 6, "")...)
	// The second replica's clock is a day behind: its records come first.
	l := openReportLogFrom(t, early, reportStart.Add(-24*time.Hour), audit.Config{})
	writeRecords(t, l, call("e0", "early", "list_workflows"), call("e1", "early", "list_workflows"))
	opts := keyed()
	opts.Detail, opts.MaxRows = true, 5
	s := report(t, []string{late, early}, Filter{}, opts)
	var who []string
	for _, r := range s.Detail.Rows {
		who = append(who, r.Principal)
	}
	if fmt.Sprint(who) != "[early early late late late]" || s.Detail.RowsLeftOut != 3 {
		t.Fatalf("rows %v, %d left out; want the two early calls, then three late, and 3 left out", who, s.Detail.RowsLeftOut)
	}
	if page := pageOf(t, s); !strings.Contains(page, "3 rows are left out of this table: it holds the earliest 5 of the 8 calls") {
		t.Errorf("the page does not say what it left out")
	}
}

// TestATimelineWidensItsBucketsToStayBounded: ten days of calls, in any
// order, fit in at most MaxTimelineBuckets buckets of one of the widths,
// and every call is counted once.
func TestATimelineWidensItsBucketsToStayBounded(t *testing.T) {
	t.Parallel()
	tl := newTimeline()
	start := time.Date(2026, 11, 20, 13, 7, 3, 0, time.UTC)
	for i := range 1000 {
		at := start.Add(time.Duration((i*7919)%1000) * 864 * time.Second) // spread over 10 days, shuffled
		tl.bucket(at).Calls["p"+strconv.Itoa(i%3)]++
	}
	got := tl.done()
	total := 0
	for i, b := range got.Buckets {
		total += b.Calls["p0"] + b.Calls["p1"] + b.Calls["p2"]
		if !b.Start.Equal(got.Start.Add(time.Duration(i) * got.Width)) {
			t.Fatalf("bucket %d starts at %s", i, b.Start)
		}
	}
	if got.Width != 6*time.Hour || len(got.Buckets) > MaxTimelineBuckets || total != 1000 {
		t.Fatalf("width %s, %d buckets, %d calls; want 6h, at most %d, 1000", got.Width, len(got.Buckets), total, MaxTimelineBuckets)
	}
}

// TestATimelineOfForgedTimesStaysBounded: a links-only or --unverified
// report reads times a forger wrote, as far apart as the clock reaches;
// the timeline still ends, within its bound, each count in a bucket.
func TestATimelineOfForgedTimesStaysBounded(t *testing.T) {
	t.Parallel()
	tl := newTimeline()
	for _, at := range []time.Time{reportStart, time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64), {}, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)} {
		tl.bucket(at).Calls["forger"]++
	}
	got, total := tl.done(), 0
	for _, b := range got.Buckets {
		total += b.Calls["forger"]
	}
	if len(got.Buckets) > MaxTimelineBuckets || total != 5 || got.Width <= 0 {
		t.Fatalf("%d buckets of %s holding %d calls; want at most %d holding 5", len(got.Buckets), got.Width, total, MaxTimelineBuckets)
	}
}
