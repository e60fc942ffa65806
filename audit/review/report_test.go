package review

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/audittest"
)

// reportStart is when a test log's clock starts; each record is a minute
// after the one before.
var reportStart = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// openReportLog opens a log at path under testKey (and cfg's signer) whose
// clock moves a minute per record.
func openReportLog(t *testing.T, path string, cfg audit.Config) *audit.Log {
	t.Helper()
	return openReportLogFrom(t, path, reportStart, cfg)
}

// openReportLogFrom is openReportLog with a clock starting at start: a
// replica's whose clock is not the first's.
func openReportLogFrom(t *testing.T, path string, start time.Time, cfg audit.Config) *audit.Log {
	t.Helper()
	now := start
	cfg.Path, cfg.Key, cfg.Now = path, audittest.Key, func() time.Time { now = now.Add(time.Minute); return now }
	l, err := audit.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// writeRecords writes records to l and closes it.
func writeRecords(t *testing.T, l *audit.Log, records ...audit.Record) {
	t.Helper()
	for _, r := range records {
		if err := l.Write(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// call and result are a call record and its result record, as the gateway
// writes them: sharing a request id and the principal.
func call(id, principal, tool string, args ...audit.Arg) audit.Record {
	r := audittest.CallRecord(principal, tool, args...)
	r.RequestID = id
	return r
}

func result(id, principal, tool string, o audit.Outcome) audit.Record {
	return audit.Record{Kind: audit.KindResult, RequestID: id, Principal: principal, Method: "tools/call", Tool: tool, Outcome: o}
}

// calls are n calls of tool by principal, their request ids prefix0,
// prefix1, …, each followed by its result with outcome o, or alone when o
// is "".
func calls(prefix, principal, tool string, n int, o audit.Outcome) []audit.Record {
	var records []audit.Record
	for i := range n {
		id := fmt.Sprint(prefix, i)
		records = append(records, call(id, principal, tool))
		if o != "" {
			records = append(records, result(id, principal, tool, o))
		}
	}
	return records
}

// keyed are report options that verify with testKey.
func keyed() ReportOptions {
	return ReportOptions{VerifyOptions: VerifyOptions{Keys: audit.NewKeyring([][]byte{audittest.Key}, nil)}}
}

func report(t *testing.T, paths []string, f Filter, opts ReportOptions) *Summary {
	t.Helper()
	s, err := Report(paths, f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func principal(s *Summary, name string) *PrincipalSummary {
	for _, p := range s.Principals {
		if p.Principal == name {
			return p
		}
	}
	return nil
}

func TestReportAnswersWhoAskedWhat(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	records := append(calls("a", "alice", "list_workflows", 3, audit.OutcomeOK),
		call("b1", "bob", "describe_workflow"), result("b1", "bob", "describe_workflow", audit.OutcomeToolError),
		audit.Record{Kind: audit.KindCall, RequestID: "b2", Principal: "bob", Method: "tools/list"},
		audit.Record{Kind: audit.KindResult, RequestID: "b2", Principal: "bob", Method: "tools/list", Outcome: audit.OutcomeOK},
		audit.Record{Kind: audit.KindDenial, ClientAddr: "203.0.113.9:5000", Outcome: audit.OutcomeUnauthenticated, Status: 401, Reason: "unknown token"},
		audit.Record{Kind: audit.KindDenial, ClientAddr: "203.0.113.9:5001", Outcome: audit.OutcomeUnauthenticated, Status: 401, Reason: "unknown token"})
	writeRecords(t, openReportLog(t, path, audit.Config{}), records...)

	s := report(t, []string{path}, Filter{}, keyed())
	if len(s.Principals) != 2 || s.Principals[0].Principal != "alice" || s.Principals[0].Calls != 3 {
		t.Fatalf("principals = %+v", s.Principals)
	}
	bob := s.Principals[1]
	if bob.Calls != 2 || bob.Failed != 1 || len(bob.Tools) != 2 {
		t.Fatalf("bob = %+v", bob)
	}
	if len(s.Denials) != 2 || s.Denials[0].Count != 1 || s.Denials[0].Status != 401 {
		t.Fatalf("denials = %+v", s.Denials)
	}

	only := report(t, []string{path}, Filter{Principal: "bob"}, keyed())
	if len(only.Principals) != 1 || only.Principals[0].Principal != "bob" {
		t.Fatalf("filter by principal = %+v", only.Principals)
	}
	late := report(t, []string{path}, Filter{Since: reportStart.Add(8 * time.Minute)}, keyed())
	if len(late.Principals) != 1 || late.Principals[0].Principal != "bob" {
		t.Fatalf("filter by time = %+v", late.Principals)
	}

	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"alice", "list_workflows", "ok=3", "tool_error=1", "unknown token", "203.0.113.9:5000"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := s.WriteJSON(&js); err != nil || !json.Valid(js.Bytes()) {
		t.Fatalf("JSON report: %v", err)
	}
}

func TestReportShowsHostileNamesQuoted(t *testing.T) {
	t.Parallel()
	if got := safe("evil\x1b[2Jname"); got != `"evil\x1b[2Jname"` {
		t.Fatalf("safe = %q", got)
	}
}

// editedPrincipalLog writes alice's calls, and sixty other principals'
// (so the report runs to several pages), then edits the principal of
// alice's first call to admin, as someone without the key would.
func editedPrincipalLog(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	records := calls("a", "alice", "list_workflows", 3, audit.OutcomeOK)
	for i := range 60 {
		id, p := fmt.Sprint("p", i), fmt.Sprintf("agent-%02d", i)
		records = append(records, call(id, p, "describe_namespace"), result(id, p, "describe_namespace", audit.OutcomeOK))
	}
	writeRecords(t, openReportLog(t, path, audit.Config{}), records...)
	editPrincipalIn(t, path, "alice", "admin")
	return path
}

// editPrincipalIn changes the first record of principal from to to, as
// someone without the key would.
func editPrincipalIn(t *testing.T, path, from, to string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(b, []byte(`"principal":"\"`+from+`\""`), []byte(`"principal":"\"`+to+`\""`), 1)
	if bytes.Equal(edited, b) {
		t.Fatalf("found no record of %s to edit", from)
	}
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}
}

// everyPageWarns fails t unless the report begins and ends with the
// warning and no run of warnEvery lines lacks it.
func everyPageWarns(t *testing.T, report, what string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(report, "\n"), "\n")
	if len(lines) < 2*warnEvery {
		t.Fatalf("the report is %d lines, too short to show pages", len(lines))
	}
	warns := func(l string) bool {
		return strings.HasPrefix(l, "WARNING: NOT VERIFIED: ") && strings.Contains(l, what)
	}
	if !warns(lines[0]) || !warns(lines[len(lines)-1]) {
		t.Fatalf("the report does not begin and end with the warning:\n%s", report)
	}
	since := 0
	for i, l := range lines {
		if warns(l) {
			since = 0
			continue
		}
		if since++; since >= warnEvery {
			t.Fatalf("lines %d to %d hold no warning:\n%s", i-since+2, i+1, report)
		}
	}
}

func TestAnEditedPrincipalIsRefusedAndUnderUnverifiedNeverCounted(t *testing.T) {
	t.Parallel()
	path := editedPrincipalLog(t)

	if _, err := Report([]string{path}, Filter{}, keyed()); !errors.Is(err, ErrNotVerified) || !strings.Contains(err.Error(), "HMAC does not match") {
		t.Fatalf("Report of an edited log = %v; want ErrNotVerified naming the HMAC", err)
	}

	opts := keyed()
	opts.Unverified = true
	s := report(t, []string{path}, Filter{}, opts)
	if s.Verified || s.Problem == nil || s.Unverified != 1 {
		t.Fatalf("verified %v, problem %v, unverified %d; want false, the problem, 1", s.Verified, s.Problem, s.Unverified)
	}
	if principal(s, "admin") != nil {
		t.Fatalf("the edited principal was counted: %+v", principal(s, "admin"))
	}
	// The edited call's result names alice, but its call was not counted.
	if a := principal(s, "alice"); a == nil || a.Calls != 2 || a.Tools[0].Outcomes[audit.OutcomeOK] != 2 {
		t.Fatalf("alice = %+v; want 2 calls, ok=2", a)
	}

	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	everyPageWarns(t, table.String(), "HMAC does not match")
	if !strings.Contains(table.String(), "unverified: 1 (records whose HMAC") {
		t.Fatalf("the table does not show the unverified count:\n%s", table.String())
	}
	var js bytes.Buffer
	if err := s.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Verified   *bool
		Problem    *Problem
		Unverified int
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || got.Verified == nil || *got.Verified || got.Problem == nil || got.Unverified != 1 {
		t.Fatalf("JSON verified %v, problem %v, unverified %d (%v); want false, the problem, 1", got.Verified, got.Problem, got.Unverified, err)
	}
}

func TestWithoutAKeyAnEditBreaksALinkAndTheReportSaysHMACsWereNotChecked(t *testing.T) {
	t.Parallel()
	path := editedPrincipalLog(t)
	if _, err := Report([]string{path}, Filter{}, ReportOptions{}); !errors.Is(err, ErrNotVerified) || !strings.Contains(err.Error(), "does not link") {
		t.Fatalf("Report without a key = %v; want ErrNotVerified at the broken link", err)
	}
	s := report(t, []string{path}, Filter{}, ReportOptions{Unverified: true})
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	everyPageWarns(t, table.String(), "does not link")
	if !strings.Contains(table.String(), "the HMACs were not checked") || strings.Contains(table.String(), "unverified:") {
		t.Fatalf("the table does not say the HMACs were not checked:\n%s", table.String())
	}
}

// provenTrail writes alice's call and its result to a log with a signed
// checkpoint every three records, and returns it with the options that
// verify it with the HMAC key and prove it by its witnessed checkpoints.
func provenTrail(t *testing.T) (path string, opts ReportOptions) {
	t.Helper()
	sig := audittest.NewSigner(t)
	tr := audittest.NewTrail(t)
	l := openReportLog(t, tr.Log, audit.Config{Signer: sig.Priv, CheckpointPath: tr.Witness, CheckpointEvery: 3})
	writeRecords(t, l, call("a1", "alice", "list_workflows"), result("a1", "alice", "list_workflows", audit.OutcomeOK))
	return tr.Log, ReportOptions{VerifyOptions: VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, sig), Checkpoints: tr.Checkpoints(t)}}
}

func TestAVerifiedReportSaysWhatItRestsOn(t *testing.T) {
	t.Parallel()
	path, opts := provenTrail(t)
	s := report(t, []string{path}, Filter{}, opts)
	if !s.Verified || s.Problem != nil || s.Unverified != 0 || len(s.Series) != 1 || s.Series[0].ProvenTo == 0 {
		t.Fatalf("verified %v, problem %v, unverified %d, series %+v", s.Verified, s.Problem, s.Unverified, s.Series)
	}
	v := s.Series[0]
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	// The header is verify's OK answer: the extent, then what it rests on.
	want := fmt.Sprintf("verified: %d records in 1 files, seq 1 to %d\n", v.Records, v.LastSeq)
	for _, line := range v.Basis {
		want += "  " + line + "\n"
	}
	if !strings.HasPrefix(table.String(), want) || !strings.Contains(want, "HMACs checked") || !strings.Contains(want, "complete and unchanged from seq 1") || strings.Contains(table.String(), "WARNING") {
		t.Fatalf("the report begins\n%s\nwant\n%s(and no warning)", table.String(), want)
	}
	var js bytes.Buffer
	if err := s.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Verified bool
		Series   []struct {
			ProvenTo uint64
			Basis    []string
		}
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || !got.Verified || len(got.Series) != 1 || got.Series[0].ProvenTo != v.ProvenTo || fmt.Sprint(got.Series[0].Basis) != fmt.Sprint(v.Basis) {
		t.Fatalf("JSON %s (%v)", js.String(), err)
	}
}

// TestAReportVerifiesEachReplicasChainOnItsOwn: each replica writes a
// chain of its own; one report covers both, each verified with the
// checkpoints collected from every replica, and an edit of either refuses
// it.
func TestAReportVerifiesEachReplicasChainOnItsOwn(t *testing.T) {
	t.Parallel()
	sig := audittest.NewSigner(t)
	a, b := audittest.NewTrail(t), audittest.NewTrail(t)
	for _, r := range []struct {
		tr        audittest.Trail
		principal string
	}{{a, "alice"}, {b, "bob"}} {
		records := calls(r.principal, r.principal, "list_workflows", 4, audit.OutcomeOK)
		writeRecords(t, openReportLog(t, r.tr.Log, audit.Config{Signer: sig.Priv, CheckpointPath: r.tr.Witness, CheckpointEvery: 3}), records...)
	}
	opts := ReportOptions{VerifyOptions: VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, sig), Checkpoints: append(a.Checkpoints(t), b.Checkpoints(t)...)}}
	s := report(t, []string{b.Log, a.Log}, Filter{}, opts)
	if !s.Verified || len(s.Series) != 2 || s.Series[0].ProvenTo == 0 || s.Series[1].ProvenTo == 0 {
		t.Fatalf("verified %v, series %+v; want two, each proven", s.Verified, s.Series)
	}
	if p, q := principal(s, "alice"), principal(s, "bob"); p == nil || q == nil || p.Calls != 4 || q.Calls != 4 || p.Tools[0].Outcomes[audit.OutcomeOK] != 4 {
		t.Fatalf("principals = %+v", s.Principals)
	}
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(table.String(), "verified: 2 series, one per chain, each on its own\nseries 1: ") || !strings.Contains(table.String(), "\nseries 2: ") {
		t.Fatalf("the report does not say each series was verified:\n%s", table.String())
	}

	opts.FromCheckpoint = a.Checkpoints(t)[0].Seq
	if _, err := Report([]string{a.Log, b.Log}, Filter{}, opts); err == nil || !strings.Contains(err.Error(), "one replica's files") {
		t.Fatalf("--from-checkpoint with two chains = %v; want it refused", err)
	}
	opts.FromCheckpoint = 0

	editPrincipalIn(t, b.Log, "bob", "admin")
	if _, err := Report([]string{a.Log, b.Log}, Filter{}, opts); !errors.Is(err, ErrNotVerified) || !strings.Contains(err.Error(), b.Log) {
		t.Fatalf("Report with one replica's log edited = %v; want ErrNotVerified naming it", err)
	}
	opts.Unverified = true
	s = report(t, []string{a.Log, b.Log}, Filter{}, opts)
	if s.Verified || s.Series[0].OK() == s.Series[1].OK() || principal(s, "admin") != nil || principal(s, "alice").Calls != 4 {
		t.Fatalf("verified %v, principals %+v", s.Verified, s.Principals)
	}
}

// TestAnUpgradedVersion1TrailReportsAsOneSeries: the rotated files
// written before records named their chain join the chain the log was
// upgraded into.
func TestAnUpgradedVersion1TrailReportsAsOneSeries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, _ := filepath.Glob("testdata/v1/audit.log*")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600)
	}
	key, _ := os.ReadFile("testdata/v1/audit.key")
	l, err := audit.Open(audit.Config{Path: filepath.Join(dir, "audit.log"), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	writeRecords(t, l, call("r9", "alice", "list_workflows"), result("r9", "alice", "list_workflows", audit.OutcomeOK))
	paths, _ := filepath.Glob(filepath.Join(dir, "audit.log*"))
	s := report(t, paths, Filter{}, ReportOptions{VerifyOptions: VerifyOptions{Keys: audit.NewKeyring([][]byte{key}, nil)}})
	if !s.Verified || len(s.Series) != 1 || s.Series[0].Chain == "" || principal(s, "alice").Calls != 9 {
		t.Fatalf("verified %v, series %+v, principals %+v; want one series of 9 calls", s.Verified, s.Series, s.Principals)
	}
}

func TestAResultIsCountedWithItsCall(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	// Records are a minute apart, from reportStart plus a minute (the
	// chain-start) on.
	writeRecords(t, openReportLog(t, path, audit.Config{}),
		call("r1", "alice", "list_workflows"),                             // 2
		call("r1", "bob", "list_workflows"),                               // 3: the same request id, another principal
		result("r1", "alice", "list_workflows", audit.OutcomeToolError),   // 4
		result("r1", "bob", "list_workflows", audit.OutcomeOK),            // 5
		call("r2", "alice", "describe_workflow"),                          // 6
		result("r2", "alice", "describe_workflow", audit.OutcomeOK),       // 7: after --until, counted with its call
		call("r2", "alice", "describe_workflow"),                          // 8: after --until
		result("r2", "alice", "describe_workflow", audit.OutcomeInternal), // 9: its call was not counted
		result("r3", "alice", "describe_workflow", audit.OutcomeInternal), // 10: no call
	)
	s := report(t, []string{path}, Filter{Until: reportStart.Add(6*time.Minute + 30*time.Second)}, keyed())
	alice, bob := principal(s, "alice"), principal(s, "bob")
	if alice == nil || alice.Calls != 2 || alice.Failed != 1 || bob == nil || bob.Calls != 1 || bob.Failed != 0 {
		t.Fatalf("alice %+v, bob %+v; want alice 2 calls 1 failed, bob 1 call", alice, bob)
	}
	for _, tool := range alice.Tools {
		if tool.Calls != 1 || len(tool.Outcomes) != 1 {
			t.Errorf("alice's %s: %d calls, outcomes %v; want 1 call, one outcome", tool.Tool, tool.Calls, tool.Outcomes)
		}
	}
	if s.Records != 6 {
		t.Fatalf("%d records counted, want 6 (3 calls, 3 results)", s.Records)
	}
	onlyBob := report(t, []string{path}, Filter{Principal: "bob"}, keyed())
	if len(onlyBob.Principals) != 1 || onlyBob.Principals[0].Tools[0].Outcomes[audit.OutcomeOK] != 1 || onlyBob.Principals[0].Failed != 0 {
		t.Fatalf("bob alone = %+v; his result, not alice's of the same request id", onlyBob.Principals)
	}
}

func TestAReportFromACheckpointReadsOnlyWhatWasVerified(t *testing.T) {
	t.Parallel()
	sig := audittest.NewSigner(t)
	tr := audittest.NewTrail(t)
	records := calls("a", "alice", "list_workflows", 10, audit.OutcomeOK)
	writeRecords(t, openReportLog(t, tr.Log, audit.Config{Signer: sig.Priv, CheckpointPath: tr.Witness, CheckpointEvery: 4}), records...)
	cps := tr.Checkpoints(t)
	from := cps[2].Seq
	opts := ReportOptions{VerifyOptions: VerifyOptions{Keys: audittest.Ring([][]byte{audittest.Key}, sig), Checkpoints: cps, FromCheckpoint: from}}
	s := report(t, []string{tr.Log}, Filter{}, opts)
	b, _ := os.ReadFile(tr.Log)
	want := 0
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if e, err := audit.ParseLineKey(line, nil); err == nil && e.Kind == audit.KindCall && e.Seq >= from {
			want++
		}
	}
	if !s.Verified || len(s.Principals) != 1 || s.Principals[0].Calls != want || want == 0 || want == 10 {
		t.Fatalf("verified %v, principals %+v; want the %d calls from seq %d", s.Verified, s.Principals, want, from)
	}
}

// FuzzPageWarner: what the page warner writes, however it is cut into
// writes, is what a reference that inserts the warning line by line
// writes: the input, whole and in order, with the warning first, last and
// before every line that would run past warnEvery lines since the last.
func FuzzPageWarner(f *testing.F) {
	f.Add([]byte("a\nb\n"), uint8(1))
	f.Add(bytes.Repeat([]byte("line\n"), 120), uint8(7))
	f.Add([]byte("no newline at the end"), uint8(3))
	f.Add(bytes.Repeat([]byte("\n"), 99), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		const warning = "WARNING\n"
		var got bytes.Buffer
		p := &pageWarner{w: &got, warning: []byte(warning), every: warnEvery}
		if err := p.warn(); err != nil {
			t.Fatal(err)
		}
		for rest, n := in, int(chunk)+1; len(rest) > 0; rest = rest[min(n, len(rest)):] {
			if w, err := p.Write(rest[:min(n, len(rest))]); err != nil || w != min(n, len(rest)) {
				t.Fatalf("Write = %d, %v", w, err)
			}
		}
		if err := p.warn(); err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		want.WriteString(warning)
		since := 0
		for _, line := range strings.SplitAfter(string(in), "\n") {
			if line == "" {
				continue
			}
			if since == warnEvery-1 {
				want.WriteString(warning)
				since = 0
			}
			want.WriteString(line)
			if strings.HasSuffix(line, "\n") {
				since++
			} else {
				want.WriteString("\n")
			}
		}
		want.WriteString(warning)
		if got.String() != want.String() {
			t.Fatalf("page warner wrote\n%q\nwant\n%q", got.String(), want.String())
		}
	})
}

func TestToolAndArgumentFiltersMatchWhatTheClientSentExactly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	wf := func(v string) audit.Arg { return audit.Arg{Name: "workflowId", Value: v} }
	writeRecords(t, openReportLog(t, path, audit.Config{}),
		call("a1", "alice", "list_workflows", audit.Arg{Name: "query", Value: "WorkflowId = 'order-123'"}),
		result("a1", "alice", "list_workflows", audit.OutcomeOK),
		call("a2", "alice", "describe_workflow", wf("order-123"), audit.Arg{Name: "runId", Value: "r-1"}),
		result("a2", "alice", "describe_workflow", audit.OutcomeToolError),
		call("a3", "alice", "describe_workflow", wf("order-1234")),
		result("a3", "alice", "describe_workflow", audit.OutcomeOK),
		call("b1", "bob", "describe_workflow", wf(`"order-123"`)), // quotes of its own
		result("b1", "bob", "describe_workflow", audit.OutcomeOK),
		call("b2", "bob", "describe_workflow", wf("order-123\x1b[2J\u202e")), // a terminal escape and a bidi override
		result("b2", "bob", "describe_workflow", audit.OutcomeOK),
		call("e1", "eve", "describe_workflow\n", wf("order-123")), // a tool name with a newline
		result("e1", "eve", "describe_workflow\n", audit.OutcomeOK),
		call("m1", "mallory", "describe_workflow", audit.Arg{Name: "workflowId=order-123", Value: "x"}), // a name holding "="
		result("m1", "mallory", "describe_workflow", audit.OutcomeOK),
		audit.Record{Kind: audit.KindDenial, ClientAddr: "203.0.113.9:5000", Outcome: audit.OutcomeUnauthenticated, Status: 401, Reason: "unknown token"},
	)
	calls := func(s *Summary) map[string]int {
		m := map[string]int{}
		for _, p := range s.Principals {
			m[p.Principal] = p.Calls
		}
		return m
	}
	for _, c := range []struct {
		name string
		f    Filter
		want map[string]int
	}{
		{"a tool and an exact value admit only that value, not one that holds it", Filter{Tool: "describe_workflow", Args: []ArgFilter{{Name: "workflowId", Value: "order-123"}}}, map[string]int{"alice": 1}},
		{"a value with quotes of its own is matched with them", Filter{Args: []ArgFilter{{Name: "workflowId", Value: `"order-123"`}}}, map[string]int{"bob": 1}},
		{"a value with escapes is matched as it was sent", Filter{Args: []ArgFilter{{Name: "workflowId", Value: "order-123\x1b[2J\u202e"}}}, map[string]int{"bob": 1}},
		{"a substring admits every value containing it", Filter{Args: []ArgFilter{{Name: "workflowId", Value: "order-123", Substring: true}}}, map[string]int{"alice": 2, "bob": 2, "eve": 1}},
		{"a substring of a query", Filter{Args: []ArgFilter{{Name: "query", Value: "order-123", Substring: true}}}, map[string]int{"alice": 1}},
		{"a hostile tool name is matched as it was sent", Filter{Tool: "describe_workflow\n"}, map[string]int{"eve": 1}},
		{"a name holding = is matched whole", Filter{Args: []ArgFilter{{Name: "workflowId=order-123", Value: "x"}}}, map[string]int{"mallory": 1}},
		{"every argument filter must be met", Filter{Args: []ArgFilter{{Name: "workflowId", Value: "order-123"}, {Name: "runId", Value: "r-1"}}}, map[string]int{"alice": 1}},
		{"one argument filter unmet admits nothing", Filter{Args: []ArgFilter{{Name: "workflowId", Value: "order-123"}, {Name: "runId", Value: "r-2"}}}, map[string]int{}},
		{"a principal and an argument: what alice asked about order-123", Filter{Principal: "alice", Args: []ArgFilter{{Name: "workflowId", Value: "order-123"}}}, map[string]int{"alice": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := report(t, []string{path}, c.f, keyed())
			if got := calls(s); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("calls by principal = %v, want %v", got, c.want)
			}
			if !s.DenialsLeftOut || len(s.Denials) != 0 {
				t.Fatalf("denials left out %v, denials %+v; want left out", s.DenialsLeftOut, s.Denials)
			}
			for _, p := range s.Principals {
				for _, tool := range p.Tools {
					n := 0
					for _, k := range tool.Outcomes {
						n += k
					}
					if n != tool.Calls {
						t.Errorf("%s's %q: %d calls, %d outcomes; each call's result follows it", p.Principal, tool.Tool, tool.Calls, n)
					}
				}
			}
		})
	}

	s := report(t, []string{path}, Filter{Tool: "describe_workflow", Args: []ArgFilter{{Name: "workflowId", Value: "order-123\x1b"}}}, keyed())
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`filter: tool "describe_workflow"; argument "workflowId" = "order-123\x1b"`, "Denials are left out"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
	if strings.ContainsRune(table.String(), '\x1b') {
		t.Errorf("the table carries an escape:\n%q", table.String())
	}
	if all := report(t, []string{path}, Filter{Principal: "alice"}, keyed()); all.DenialsLeftOut {
		t.Errorf("a principal's report says denials were left out")
	}
}

func TestAReportOfNoFilesIsRefused(t *testing.T) {
	t.Parallel()
	if _, err := Report(nil, Filter{}, ReportOptions{}); !errors.Is(err, ErrNotVerified) || !strings.Contains(err.Error(), "holds no record") {
		t.Fatalf("Report of no files = %v; want ErrNotVerified", err)
	}
}

// TestAReportQuotesAnOutcomeAForgerWrote: an outcome is porthole's own
// word only where the record's HMAC was checked; a links-only report read
// one a forger could write, and printed its terminal escapes as they were
// (found by the page's fuzz target).
func TestAReportQuotesAnOutcomeAForgerWrote(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	forged := audit.Outcome("ok\x1b[2J")
	writeRecords(t, openReportLog(t, path, audit.Config{}), call("a1", "alice", "list_workflows"), result("a1", "alice", "list_workflows", forged),
		audit.Record{Kind: audit.KindDenial, ClientAddr: "203.0.113.9", Outcome: forged, Status: 401, Reason: "unknown token"})
	var table bytes.Buffer
	if err := report(t, []string{path}, Filter{}, ReportOptions{}).WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(table.String(), '\x1b') || strings.Count(table.String(), `"ok\x1b[2J"`) != 2 {
		t.Fatalf("the forged outcome is not shown quoted, in the tool row and the denial row:\n%q", table.String())
	}
}

// TestAReportCountsEachLineAsItsOwnCheckDecided: report counts each line
// as the check of that very line decided, with the keys given, whether the
// walk checked it (lines read ahead in batches) or verification stopped
// before the walk: calls whose principal was edited, scattered over the
// batches, are each counted as unverified and never as their principal's.
func TestAReportCountsEachLineAsItsOwnCheckDecided(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	lines := audittest.WriteLog(t, path, audit.Config{}, 3000)
	edited := []int{1, 1023, 1025, 2047, 3001, 5999} // calls: line 0 is the chain-start
	for _, i := range edited {
		e := bytes.Replace(lines[i], []byte(`"principal":"\"alice\""`), []byte(`"principal":"\"mallo\""`), 1)
		if bytes.Equal(e, lines[i]) {
			t.Fatalf("line %d is no call of alice's: %s", i, lines[i])
		}
		lines[i] = e
	}
	audittest.Rewrite(t, path, lines)
	cases := []struct {
		name        string
		checkpoints []audit.Checkpoint
	}{
		{"counted by the walk", nil},
		{"counted after a problem found before the walk", []audit.Checkpoint{{Chain: "another chain", Seq: 1}}},
	}
	for _, c := range cases {
		opts := keyed()
		opts.Unverified, opts.Checkpoints = true, c.checkpoints
		s := report(t, []string{path}, Filter{}, opts)
		if s.Verified || s.Unverified != len(edited) {
			t.Fatalf("%s: verified %v, unverified %d; want false, %d", c.name, s.Verified, s.Unverified, len(edited))
		}
		if p := principal(s, "mallo"); p != nil {
			t.Fatalf("%s: an edited principal was counted: %+v", c.name, p)
		}
		if a := principal(s, "alice"); a == nil || a.Calls != 3000-len(edited) {
			t.Fatalf("%s: alice = %+v; want %d calls", c.name, a, 3000-len(edited))
		}
	}
}
