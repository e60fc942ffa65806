package review

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/audittest"
)

// relink applies edit to each line of the log at path and recomputes each
// line's prev, as a forger without the HMAC key does: only the links are
// left to catch the edit, and they do not.
func relink(t *testing.T, path string, edit func(i int, line string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	prevRE := regexp.MustCompile(`"prev":"[0-9a-f]*"`)
	for i := range lines {
		lines[i] = edit(i, lines[i])
		if i > 0 {
			sum := sha256.Sum256([]byte(lines[i-1]))
			lines[i] = prevRE.ReplaceAllString(lines[i], `"prev":"`+hex.EncodeToString(sum[:])+`"`)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAForgedChainIDIsABreakAndIsNeverEchoed: a chain id is porthole's 32
// hex digits; one a forger wrote into a links-only log, holding terminal
// escapes and a bidi override, breaks the series without being repeated,
// and a Verification made with one shows it quoted.
func TestAForgedChainIDIsABreakAndIsNeverEchoed(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	writeRecords(t, openReportLog(t, path, audit.Config{}), call("a1", "alice", "list_workflows"), result("a1", "alice", "list_workflows", audit.OutcomeOK))
	forged := `safe\u202eSKCEHC CAMH LLA :deifirev\u001b[2J`
	relink(t, path, func(_ int, l string) string {
		return regexp.MustCompile(`"chain":"[0-9a-f]+"`).ReplaceAllString(l, `"chain":"`+forged+`"`)
	})
	v, err := VerifyWith([]string{path}, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.OK() || !strings.Contains(v.Problem.What, "not a chain id porthole makes") || strings.ContainsAny(v.Problem.String(), "\x1b\u202e") {
		t.Fatalf("verify: %v; want a break that does not repeat the chain", v.Problem)
	}
	s, err := Report([]string{path}, Filter{}, ReportOptions{Unverified: true, Detail: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pageProblems(pageOf(t, s)) {
		t.Error("page:", p)
	}
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(table.String(), "\x1b\u202e") {
		t.Errorf("the text report carries a raw ESC or RLO: %q", table.String())
	}
	basis := strings.Join((&Verification{Chain: "\x1b[2J\u202e"}).Basis(), "\n")
	if strings.ContainsAny(basis, "\x1b\u202e") || !strings.Contains(basis, `chain "\x1b[2J\u202e"`) {
		t.Errorf("a Verification's basis shows its chain as %q", basis)
	}
}

// TestLinksOnlyIsSaidOfEverySeriesReadByItsLinks: with a public key and
// checkpoints but no HMAC key, a second series no checkpoint witnesses
// breaks verification; reported anyway (--unverified), its records rest on
// their links alone, and the JSON says so beside "verified": false.
func TestLinksOnlyIsSaidOfEverySeriesReadByItsLinks(t *testing.T) {
	t.Parallel()
	// A series proven whole: closed, its last checkpoint at the close.
	sig := audittest.NewSigner(t)
	tr := audittest.NewTrail(t)
	writeRecords(t, openReportLog(t, tr.Log, audit.Config{Signer: sig.Priv, CheckpointPath: tr.Witness, CheckpointEvery: 3}),
		call("a1", "alice", "list_workflows"), result("a1", "alice", "list_workflows", audit.OutcomeOK))
	opts := ReportOptions{Unverified: true, VerifyOptions: VerifyOptions{Keys: audittest.Ring(nil, sig), Checkpoints: tr.Checkpoints(t)}}
	other := filepath.Join(t.TempDir(), "other.log")
	writeRecords(t, openReportLog(t, other, audit.Config{}), call("b1", "bob", "list_workflows"))
	if s := report(t, []string{tr.Log}, Filter{}, opts); !s.Verified || s.LinksOnly || s.Series[0].ProvenTo == 0 {
		t.Fatalf("the proven series alone: verified %t, linksOnly %t, proven to %d", s.Verified, s.LinksOnly, s.Series[0].ProvenTo)
	}
	s, err := Report([]string{tr.Log, other}, Filter{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if s.Verified || !s.LinksOnly {
		t.Fatalf("verified %t, linksOnly %t; want false and true", s.Verified, s.LinksOnly)
	}
}

// crashedTrail writes four calls and their results under checkpoints every
// five records, and returns a copy of the log as a crash leaves it (no
// close, no last checkpoint), the checkpoints, and options verifying with
// the public key and the checkpoints but no HMAC key.
func crashedTrail(t *testing.T) (path string, last uint64, opts ReportOptions) {
	t.Helper()
	sig := audittest.NewSigner(t)
	tr := audittest.NewTrail(t)
	l := openReportLog(t, tr.Log, audit.Config{Signer: sig.Priv, CheckpointPath: tr.Witness, CheckpointEvery: 5})
	t.Cleanup(func() { l.Close() })
	for i := range 4 {
		id := fmt.Sprint("a", i)
		for _, r := range []audit.Record{call(id, "alice", "list_workflows"), result(id, "alice", "list_workflows", audit.OutcomeOK)} {
			if err := l.Write(t.Context(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
	path = filepath.Join(t.TempDir(), "audit.log")
	b, err := os.ReadFile(tr.Log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cps := tr.Checkpoints(t)
	return path, cps[len(cps)-1].Seq, ReportOptions{Detail: true, VerifyOptions: VerifyOptions{Keys: audittest.Ring(nil, sig), Checkpoints: cps}}
}

// TestRecordsAfterTheLatestCheckpointWithoutAKeyAreNotCalledVerified: with
// a public key and checkpoints but no HMAC key, the records after the
// latest checkpoint rest on their links alone. A forger rewrote them
// (alice's calls there made admin's); the page and the text report say
// what is proven and what anyone could have written, in red.
func TestRecordsAfterTheLatestCheckpointWithoutAKeyAreNotCalledVerified(t *testing.T) {
	t.Parallel()
	path, last, opts := crashedTrail(t)
	relink(t, path, func(i int, line string) string {
		if uint64(i+1) > last {
			return strings.ReplaceAll(line, `\"alice\"`, `\"admin\"`)
		}
		return line
	})
	s, err := Report([]string{path}, Filter{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if principal(s, "admin") == nil {
		t.Fatalf("the forged tail was not counted; the test forged nothing")
	}
	var js bytes.Buffer
	if err := s.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !s.LinksOnly || !strings.Contains(js.String(), `"linksOnly": true`) {
		t.Errorf("the JSON does not say the tail rests on its links alone:\n%.300s", js.String())
	}
	page := pageOf(t, s)
	verdict := regexp.MustCompile(`(?s)<div class="verdict (\w+)" id="verdict">(.*?)</div>`).FindStringSubmatch(page)
	headline := fmt.Sprintf("Verified to seq %d by signed checkpoints; seq %d to ", last, last+1)
	if verdict == nil || verdict[1] != "bad" || !strings.Contains(verdict[2], headline) ||
		!strings.Contains(verdict[2], "checked by their links only (anyone could have written them)") ||
		!strings.Contains(verdict[2], "links only: NOT proven unchanged or complete") || strings.Contains(verdict[2], "Verified: ") {
		t.Errorf("the verdict does not say the tail is links only, in red:\n%s", verdict)
	}
	if n := strings.Count(page, `<p class="warning">NOT verified past the latest signed checkpoint`); n < 6 {
		t.Errorf("%d red lines; want one at the top, above each section and at the end", n)
	}
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(table.String(), "NOT verified throughout: "+headline) || !strings.Contains(table.String(), "links only: NOT proven unchanged or complete") {
		t.Errorf("the text report's header:\n%s", strings.SplitN(table.String(), "\n\n", 2)[0])
	}
}

// TestFirstAndLastSeenAreTheEarliestAndLatestAcrossReplicas: two
// replicas, read in either order, the second's clock a day behind, or
// overlapping the first's: a principal's first and last seen are the
// earliest and latest of its calls in all of them.
func TestFirstAndLastSeenAreTheEarliestAndLatestAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		offset time.Duration
	}{{"a day behind", -24 * time.Hour}, {"overlapping", 3 * time.Minute}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
			writeRecords(t, openReportLog(t, a, audit.Config{}), calls("a", "alice", "list_workflows", 10, "")...)
			writeRecords(t, openReportLogFrom(t, b, reportStart.Add(c.offset), audit.Config{}), call("b0", "alice", "list_workflows"))
			for _, order := range [][]string{{a, b}, {b, a}} {
				s := report(t, order, Filter{}, keyed())
				p := principal(s, "alice")
				if !p.FirstSeen.Equal(s.From) || !p.LastSeen.Equal(s.To) {
					t.Errorf("read %v: alice first and last seen %s and %s; her calls span %s to %s", order, p.FirstSeen, p.LastSeen, s.From, s.To)
				}
			}
		})
	}
}

// TestAForgedLogsLongNamesAreCutOnThePage: a forged log's principal and
// tool of 64 KB each are cut in every row and cell to what porthole
// writes, saying so, so twenty calls make a page of kilobytes.
func TestAForgedLogsLongNamesAreCutOnThePage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	records := append(calls("a", "alice", "list_workflows", 20, audit.OutcomeOK), audit.Record{Kind: audit.KindDenial, ClientAddr: "203.0.113.9", Outcome: audit.OutcomeInvalid, Status: 400, Reason: "not JSON"})
	writeRecords(t, openReportLog(t, path, audit.Config{}), records...)
	big := strings.Repeat("P", 64<<10)
	relink(t, path, func(_ int, l string) string {
		l = strings.ReplaceAll(l, `"principal":"\"alice\""`, `"principal":"\"`+big+`\""`)
		l = strings.ReplaceAll(l, `"clientAddr":"203.0.113.9"`, `"clientAddr":"`+big+`"`)
		l = strings.ReplaceAll(l, `"reason":"not JSON"`, `"reason":"`+big+`"`)
		return strings.ReplaceAll(l, `"tool":"\"list_workflows\""`, `"tool":"\"T`+big+`\""`)
	})
	s := report(t, []string{path}, Filter{}, ReportOptions{Detail: true})
	page := pageOf(t, s)
	cut := fmt.Sprintf("(cut: %d bytes in all)", len(big))
	for _, r := range s.Detail.Rows {
		for _, f := range []string{r.Principal, r.Tool, r.ClientAddr, r.Reason} {
			if len(f) > audit.MaxReasonBytes+len("... (cut: 65536 bytes in all)") {
				t.Errorf("a row holds a name of %d bytes", len(f))
			}
		}
	}
	if len(page) > 64<<10 || !strings.Contains(page, strings.Repeat("P", audit.MaxToolBytes)+"... "+cut) {
		t.Errorf("twenty forged calls made a page of %d bytes, or it does not say what it cut", len(page))
	}
}

// TestARowLeftOutIsNotKeptByItsOpenCall: the page keeps ten rows of calls
// whose results never come; the calls still open hold no other row, and
// the results that come later are still counted in the timeline.
func TestARowLeftOutIsNotKeptByItsOpenCall(t *testing.T) {
	t.Parallel()
	s := &Summary{Principals: []*PrincipalSummary{}, Denials: []*DenialSummary{}}
	z := &summarizer{s: s, principals: map[string]*PrincipalSummary{}, tools: map[toolKey]*ToolSummary{},
		denials: map[string]*DenialSummary{}, open: map[callKey]openCall{}, detail: newDetailer(10)}
	value := audit.Quote(strings.Repeat("v", 250))
	for i := range 1000 {
		// Later calls first, so that each keeps the heap's place a while.
		e := audit.Entry{Time: reportStart.Add(time.Duration(1000-i) * time.Second), Seq: uint64(i + 1), Kind: audit.KindCall,
			RequestID: fmt.Sprint("c", i), Principal: "alice", Tool: audit.Quote("list_workflows")}
		e.Args = append(e.Args, struct {
			Name      string `json:"name"`
			Value     string `json:"value"`
			Truncated bool   `json:"truncated"`
		}{audit.Quote("a"), value, false})
		z.call(e)
	}
	z.result(audit.Entry{Kind: audit.KindResult, RequestID: "c0", Principal: "alice", Outcome: audit.OutcomeOK})
	rows := 0
	for _, c := range z.open {
		if c.row != nil {
			rows++
		}
	}
	d := z.detail.done()
	outcomes := 0
	for _, b := range d.Timeline.Buckets {
		outcomes += b.Outcomes[audit.OutcomeOK]
	}
	if rows != 10 || len(d.Rows) != 10 || d.RowsLeftOut != 990 || outcomes != 1 {
		t.Fatalf("open calls hold %d rows, the page keeps %d (%d left out), the timeline counts %d results; want 10, 10 (990), 1",
			rows, len(d.Rows), d.RowsLeftOut, outcomes)
	}
}

// TestTheSummaryTablesOfAPageAreBounded: 3000 client addresses refused and
// 3000 tool names called make tables of at most 1000 rows each on the
// page, each saying how many it left out; the counts keep every one.
func TestTheSummaryTablesOfAPageAreBounded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	var records []audit.Record
	for i := range 3000 {
		records = append(records, audit.Record{Kind: audit.KindDenial, ClientAddr: fmt.Sprintf("10.%d.%d.1:5", i/250, i%250), Outcome: audit.OutcomeUnauthenticated, Status: 401, Reason: "unknown token"},
			call(fmt.Sprint("c", i), "mallory", fmt.Sprintf("tool_%05d", i)))
	}
	writeRecords(t, openReportLog(t, path, audit.Config{}), records...)
	opts := keyed()
	opts.Detail, opts.MaxRows = true, 100
	s := report(t, []string{path}, Filter{}, opts)
	page := pageOf(t, s)
	if len(s.Denials) != 3000 || len(s.Principals[0].Tools) != 3000 {
		t.Fatalf("the summary counts %d denial rows and %d tools; want 3000 each", len(s.Denials), len(s.Principals[0].Tools))
	}
	if n := strings.Count(page, "<tr>"); n > 100+1+2*maxTableRows+4 {
		t.Errorf("the page holds %d table rows", n)
	}
	for _, want := range []string{"2000 rows are left out of this table: it holds 1000, the busiest", "2000 rows are left out of this table: it holds the 1000 most frequent"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestADenialsSummaryIsDrawnAtTheTimeItWasAdmittedBy: a summary whose
// denials (as it says) came days after its record is drawn at its record's
// time, which the filter admits it by: the timeline stays within the range
// the page states.
func TestADenialsSummaryIsDrawnAtTheTimeItWasAdmittedBy(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	writeRecords(t, openReportLog(t, path, audit.Config{}), call("a1", "alice", "list_workflows"), result("a1", "alice", "list_workflows", audit.OutcomeOK),
		audit.Record{Kind: audit.KindDenials, ClientAddr: "203.0.113.9", Count: 5, First: reportStart.Add(48 * time.Hour), Last: reportStart.Add(72 * time.Hour),
			Groups: []audit.DenialGroup{{Count: 5, Outcome: audit.OutcomeUnauthenticated, Status: 401, Reason: "unknown token"}}})
	opts := keyed()
	opts.Detail = true
	s := report(t, []string{path}, Filter{}, opts)
	tl := s.Detail.Timeline
	end := tl.Start.Add(time.Duration(len(tl.Buckets)) * tl.Width)
	if tl.Start.After(s.From) || end.After(s.To.Add(tl.Width)) {
		t.Errorf("the timeline runs %s to %s; the range is %s to %s", tl.Start, end, s.From, s.To)
	}
}

// worstPageBytes is the most a page may hold, docs/audit.md says: every
// table at its cap of rows, every name, reason, outcome and note at its
// cap, each of their bytes one that is written as six (a quote, escaped
// for Go and then for HTML).
const worstPageBytes = 96 << 20

// TestAPageOfHostileValuesAtEveryCapStaysWithinItsBound builds the largest
// page the caps allow, as a forged log could make it, and holds it to
// worstPageBytes.
func TestAPageOfHostileValuesAtEveryCapStaysWithinItsBound(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a page of tens of megabytes")
	}
	t.Parallel()
	// A quote escapes to six bytes on the page, and a byte that is not
	// printable makes a name be shown quoted (found by review).
	worst := func(n int) string { return strings.Repeat(`"`, n-1) + "\x01" }
	long := worst(64 << 10) // past every cap
	s := &Summary{Verified: true, Records: 1, From: reportStart, To: reportStart, Principals: []*PrincipalSummary{}, Denials: []*DenialSummary{}}
	var notes []string
	for range maxPageNotes + 1 {
		notes = append(notes, long)
	}
	vf := &Verification{Files: []string{"audit.log"}, Chain: long, Notes: notes}
	s.Series = []*Series{{Verification: vf, Basis: vf.Basis()}}
	// Many series, each with as many notes: the page's notes are bounded
	// over all of them (found by review: a forger without the key can
	// give every file a chain of its own).
	for i := range 200 {
		vf := &Verification{Files: []string{fmt.Sprintf("audit.log.%d", i)}, Chain: fmt.Sprintf("%032x", i+1), Notes: notes}
		s.Series = append(s.Series, &Series{Verification: vf, Basis: vf.Basis()})
	}
	outcomes := map[audit.Outcome]int{}
	for i := range 20 {
		outcomes[audit.Outcome(fmt.Sprint(i, long))] = 1
	}
	for i := range maxTableRows + 1 {
		p := &PrincipalSummary{Principal: fmt.Sprint(i, long), Calls: 1, FirstSeen: reportStart, LastSeen: reportStart,
			Tools: []*ToolSummary{{Tool: fmt.Sprint(i, long), Calls: 1, Outcomes: outcomes}}}
		s.Principals = append(s.Principals, p)
		s.Denials = append(s.Denials, &DenialSummary{Outcome: audit.Outcome(long), Reason: long, ClientAddr: fmt.Sprint(i, long), Count: 1, LastSeen: reportStart})
	}
	d := newDetailer(0)
	e := audit.Entry{Time: reportStart, Kind: audit.KindCall, Principal: long, ClientAddr: long, Transport: long, Tool: audit.Quote(long)}
	for range audit.MaxArgs {
		e.Args = append(e.Args, struct {
			Name      string `json:"name"`
			Value     string `json:"value"`
			Truncated bool   `json:"truncated"`
		}{audit.Quote(worst(8)), audit.Quote(worst(rowValueBytes)), true})
	}
	for i := range DefaultMaxRows + 1 {
		e.Seq = uint64(i + 1)
		if row, _ := d.call(e, callKey{}); row != nil {
			d.result(e.Time, row, audit.Entry{Outcome: audit.Outcome(long)})
		}
		d.denial(audit.Entry{Time: reportStart, Seq: uint64(i + 1), Kind: audit.KindDenial, Principal: long, ClientAddr: long, Outcome: audit.Outcome(long), Reason: long})
	}
	s.Detail = d.done()
	var page bytes.Buffer
	if err := s.WriteHTML(&page, PageInputs{LogFiles: []string{"audit.log"}, Generated: reportStart, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	t.Logf("the largest page: %d bytes (%.1f MiB), %d rows of records", page.Len(), float64(page.Len())/(1<<20), len(s.Detail.Rows))
	if page.Len() > worstPageBytes {
		t.Errorf("a page of %d bytes; docs/audit.md says at most %d", page.Len(), worstPageBytes)
	}
}

// TestARedPageSaysWhatItWasCheckedWithNotVerifiedWith: a page whose
// verdict is red names its keys and checkpoints under "Checked with", not
// under a heading that says they verified it.
func TestARedPageSaysWhatItWasCheckedWithNotVerifiedWith(t *testing.T) {
	t.Parallel()
	path, _ := provenTrail(t)
	s := report(t, []string{path}, Filter{}, ReportOptions{Detail: true})
	var page bytes.Buffer
	if err := s.WriteHTML(&page, PageInputs{LogFiles: []string{path}, Evidence: []string{"witnessed checkpoints file checkpoints"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "<p>Checked with:</p>") || strings.Contains(page.String(), "verified with") {
		t.Errorf("a red page's evidence heading:\n%s", regexp.MustCompile(`(?s)<div class="verdict.*?</div>`).FindString(page.String()))
	}
}

// TestAForgedChainStartReasonIsQuotedInVerifysNotes: the reason a
// chain-start record gives reaches verify's notes, which `audit verify`
// prints; in a links-only log anyone could have written it, so it is
// quoted where it is not plain printable ASCII (found by review of #27).
func TestAForgedChainStartReasonIsQuotedInVerifysNotes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	writeRecords(t, openReportLog(t, path, audit.Config{}), call("a1", "alice", "list_workflows"))
	relink(t, path, func(_ int, l string) string {
		return regexp.MustCompile(`"reason":"[^"]*"`).ReplaceAllString(l, `"reason":"all clear\u001b[2J\u202e"`)
	})
	v, err := VerifyWith([]string{path}, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(v.Notes, "\n")
	if !strings.Contains(notes, "a new chain starts") || strings.ContainsAny(notes, "\x1b\u202e") || !strings.Contains(notes, `"all clear\x1b[2J\u202e"`) {
		t.Fatalf("verify's notes show the forged reason as %q", notes)
	}
}

// TestASeriesNoCheckpointProvesIsNotVerifiedBesideAProvenOne: with no HMAC
// key, a series no checkpoint reaches (a pruned series whose latest
// checkpoint is before its first record, say) rests on its links alone,
// which a forger recomputes, even beside a series checkpoints prove whole;
// neither the table nor the page may head it "verified" (found by review).
func TestASeriesNoCheckpointProvesIsNotVerifiedBesideAProvenOne(t *testing.T) {
	t.Parallel()
	s := &Summary{Verified: true, Series: []*Series{
		{Verification: &Verification{Files: []string{"a.log"}, Chain: fmt.Sprintf("%032x", 1), Records: 4, LastSeq: 4, LastRecord: 4, ProvenTo: 4}},
		{Verification: &Verification{Files: []string{"b.log"}, Chain: fmt.Sprintf("%032x", 2), Records: 3, LastSeq: 3, LastRecord: 3}},
	}}
	var table strings.Builder
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if want := "NOT verified throughout: series 2: checked by its links only"; !strings.HasPrefix(table.String(), want) {
		t.Errorf("the table begins %.200q; want %q", table.String(), want)
	}
	if v := s.verdict(); v.Class != "bad" || !strings.Contains(v.Headline, "series 2: checked by its links only") || !strings.HasPrefix(v.Warning, "NOT verified throughout") {
		t.Errorf("the page's verdict: class %q, headline %q, warning %q; want bad, series 2 named, NOT verified throughout", v.Class, v.Headline, v.Warning)
	}
	// The series proven whole alone is verified.
	s.Series = s.Series[:1]
	if v := s.verdict(); v.Class != "good" {
		t.Errorf("a series proven whole: class %q; want good", v.Class)
	}
}

// TestARowShowsAtMostMaxArgsArguments: a forged call of a hundred thousand
// arguments with empty names and values (which cost no bytes against a
// row's budget) shows MaxArgs of them and counts the rest (found by
// review: one such row made a page of 167 MiB).
func TestARowShowsAtMostMaxArgsArguments(t *testing.T) {
	t.Parallel()
	d := newDetailer(0)
	e := audit.Entry{Time: reportStart, Kind: audit.KindCall, Principal: "mallory", Tool: audit.Quote("list_workflows")}
	e.Args = make([]struct {
		Name      string `json:"name"`
		Value     string `json:"value"`
		Truncated bool   `json:"truncated"`
	}, 100000)
	row, _ := d.call(e, callKey{})
	if row == nil {
		t.Fatal("the row was left out")
	}
	if len(row.Args) != audit.MaxArgs || row.ArgsNotShown != len(e.Args)-audit.MaxArgs {
		t.Errorf("the row shows %d arguments and counts %d not shown; want %d and %d", len(row.Args), row.ArgsNotShown, audit.MaxArgs, len(e.Args)-audit.MaxArgs)
	}
}

// TestACutOfBytesThatAreNoUTF8KeepsThem: a forged value of continuation
// bytes is cut at the cap, not walked back to nothing (found by review).
func TestACutOfBytesThatAreNoUTF8KeepsThem(t *testing.T) {
	t.Parallel()
	if got := cutText(strings.Repeat("\x80", 300), 256); len(got) != 256 {
		t.Errorf("cut to %d bytes; want 256", len(got))
	}
	if got := cutText("ab"+strings.Repeat("é", 200), 5); got != "abé" {
		t.Errorf("cut to %q; want %q (on a whole character)", got, "abé")
	}
}
