package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/review"
)

// reportTrail writes an audit log with porthole's writer, under the key
// in a key file beside it, holding each record's call and its result.
func reportTrail(t *testing.T, calls ...audit.Record) (logPath, keyPath string) {
	t.Helper()
	_, logPath, keyPath = auditEnv(t)
	key, err := readAuditKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	l, err := audit.Open(audit.Config{Path: logPath, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		c.Kind, c.RequestID, c.Method = audit.KindCall, fmt.Sprint("req-", i), "tools/call"
		r := audit.Record{Kind: audit.KindResult, RequestID: c.RequestID, Principal: c.Principal, Method: c.Method, Tool: c.Tool, Outcome: audit.OutcomeOK}
		for _, rec := range []audit.Record{c, r} {
			if err := l.Write(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return logPath, keyPath
}

// editPrincipal changes the first record of principal from to to, as
// someone without the key would.
func editPrincipal(t *testing.T, logPath, from, to string) {
	t.Helper()
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(b, []byte(`"principal":"\"`+from+`\""`), []byte(`"principal":"\"`+to+`\""`), 1)
	if bytes.Equal(edited, b) {
		t.Fatalf("no record of %s to edit", from)
	}
	if err := os.WriteFile(logPath, edited, 0o600); err != nil {
		t.Fatal(err)
	}
}

// auditReport runs porthole audit report and returns what it wrote and its
// exit code.
func auditReport(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := execPorthole(t, env, append([]string{"audit", "report"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func TestAuditReportRefusesAnEditedPrincipalAndUnderUnverifiedNeverCountsIt(t *testing.T) {
	t.Parallel()
	var calls []audit.Record
	for range 3 {
		calls = append(calls, audit.Record{Principal: "alice", Tool: "list_workflows"})
	}
	for i := range 60 {
		calls = append(calls, audit.Record{Principal: fmt.Sprintf("agent-%02d", i), Tool: "describe_namespace"})
	}
	logPath, keyPath := reportTrail(t, calls...)
	editPrincipal(t, logPath, "alice", "admin")

	out, errOut, code := auditReport(t, baseEnv(), "--key-file", keyPath, logPath)
	if code != 1 || out != "" || !strings.Contains(errOut, "does not verify") || !strings.Contains(errOut, "HMAC does not match") || !strings.Contains(errOut, "--unverified") {
		t.Fatalf("report of an edited log: exit %d, stdout %q, stderr %q; want exit 1, no report, a sentence naming the problem and --unverified", code, out, errOut)
	}

	out, errOut, code = auditReport(t, baseEnv(), "--key-file", keyPath, "--unverified", logPath)
	if code != 0 {
		t.Fatalf("report --unverified: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	warns := func(l string) bool {
		return strings.HasPrefix(l, "WARNING: NOT VERIFIED: ") && strings.Contains(l, "HMAC does not match")
	}
	if len(lines) < 100 || !warns(lines[0]) || !warns(lines[len(lines)-1]) {
		t.Fatalf("report --unverified (%d lines) does not begin and end with the warning:\n%s", len(lines), out)
	}
	for i, since := 0, 0; i < len(lines); i++ {
		if since++; warns(lines[i]) {
			since = 0
		} else if since >= 50 {
			t.Fatalf("lines %d to %d of report --unverified hold no warning:\n%s", i-48, i+1, out)
		}
	}
	if strings.Contains(out, "admin") || !strings.Contains(out, "unverified: 1 ") || !regexpLine(out, `alice\s+list_workflows\s+2\s+ok=2`) {
		t.Fatalf("report --unverified counts the edited record, or not its count:\n%s", out)
	}

	out, _, code = auditReport(t, baseEnv(), "--key-file", keyPath, "--unverified", "--json", logPath)
	var js struct {
		Verified   *bool
		Problem    *review.Problem
		Unverified int
	}
	decode(t, []byte(out), &js)
	if code != 0 || js.Verified == nil || *js.Verified || js.Problem == nil || js.Unverified != 1 {
		t.Fatalf("report --unverified --json: exit %d, %s", code, out)
	}
}

func TestAuditReportVerifiesWithTheKeyOfTheEnvironmentAndSaysWhatItRestsOn(t *testing.T) {
	t.Parallel()
	logPath, keyPath := reportTrail(t, audit.Record{Principal: "alice", Tool: "list_workflows"})
	out, errOut, code := auditReport(t, baseEnv("PORTHOLE_AUDIT_KEY_FILE="+keyPath), logPath)
	if code != 0 || !strings.HasPrefix(out, "verified: 4 records in 1 files, seq 1 to 4\n  HMACs checked: ") || !strings.Contains(out, "unverified: 0 ") {
		t.Fatalf("report with $PORTHOLE_AUDIT_KEY_FILE: exit %d, %s%s", code, out, errOut)
	}
	// Without a key the links alone prove nothing (anyone can recompute
	// them): refused, unless asked for, and then not called verified.
	if _, errOut, code = auditReport(t, baseEnv(), logPath); code == 0 || !strings.Contains(errOut, "--links-only") {
		t.Fatalf("report without a key: exit %d, %s", code, errOut)
	}
	out, errOut, code = auditReport(t, baseEnv(), "--links-only", logPath)
	if code != 0 || !strings.HasPrefix(out, "NOT verified, links only: ") {
		t.Fatalf("report --links-only: exit %d, %s%s", code, out, errOut)
	}
	out, _, code = auditReport(t, baseEnv(), "--json", "--key-file", keyPath, logPath)
	var js struct {
		Verified bool
		Series   []struct {
			Keyed bool
			Basis []string
		}
	}
	decode(t, []byte(out), &js)
	if code != 0 || !js.Verified || len(js.Series) != 1 || !js.Series[0].Keyed || !strings.HasPrefix(js.Series[0].Basis[0], "HMACs checked") {
		t.Fatalf("report --json: exit %d, %s", code, out)
	}
}

// TestAuditReportStillReadsTheCommittedV1Trail: audit/review/testdata/v1 was
// written before records carried a schema version (see
// audit.TestALogWrittenBySchemaVersion1StillVerifies).
func TestAuditReportStillReadsTheCommittedV1Trail(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../audit/review/testdata/v1/audit.log*")
	if err != nil || len(files) != 5 {
		t.Fatalf("audit/review/testdata/v1 holds %d logs (%v)", len(files), err)
	}
	out, errOut, code := auditReport(t, baseEnv(), append([]string{"--key-file", "../../audit/review/testdata/v1/audit.key"}, files...)...)
	if code != 0 || !strings.HasPrefix(out, "verified: 29 records in 5 files, seq 1 to 29\n  HMACs checked: ") || !regexpLine(out, `alice\s+list_workflows\s+8\s+ok=8`) {
		t.Fatalf("report of testdata/v1: exit %d\n%s%s", code, out, errOut)
	}
}

// TestAuditReportVerifiesEachReplicasTrailOnItsOwn: two replicas' logs
// are two chains; one report covers both, and an edit of either refuses
// it.
func TestAuditReportVerifiesEachReplicasTrailOnItsOwn(t *testing.T) {
	t.Parallel()
	a, keyPath := reportTrail(t, audit.Record{Principal: "alice", Tool: "list_workflows"})
	b, _ := reportTrail(t, audit.Record{Principal: "bob", Tool: "list_workflows"}) // auditEnv writes the same key
	out, errOut, code := auditReport(t, baseEnv(), "--key-file", keyPath, a, b)
	if code != 0 || !strings.HasPrefix(out, "verified: 2 series, one per chain, each on its own\n") || !regexpLine(out, `alice\s+list_workflows\s+1\s+ok=1`) || !regexpLine(out, `bob\s+list_workflows\s+1\s+ok=1`) {
		t.Fatalf("report of two replicas' logs: exit %d\n%s%s", code, out, errOut)
	}
	editPrincipal(t, b, "bob", "admin")
	if out, errOut, code := auditReport(t, baseEnv(), "--key-file", keyPath, a, b); code != 1 || out != "" || !strings.Contains(errOut, b) {
		t.Fatalf("report with one replica's log edited: exit %d, %s%s; want it refused, naming the file", code, out, errOut)
	}
}

// regexpLine reports whether a line of out matches pattern.
func regexpLine(out, pattern string) bool {
	return regexp.MustCompile(`(?m)^` + pattern + `\s*$`).MatchString(out)
}

// TestAuditReportAnswersWhatAliceAskedAboutAnOrderInOneCommand: --principal,
// --tool and --arg together; a value is compared exactly, or as a
// substring with ~, as the client sent it (a hostile value given on the
// command line as it was sent); denials are left out, and said to be.
func TestAuditReportAnswersWhatAliceAskedAboutAnOrderInOneCommand(t *testing.T) {
	t.Parallel()
	wf := func(v string) []audit.Arg { return []audit.Arg{{Name: "workflowId", Value: v}} }
	logPath, keyPath := reportTrail(t,
		audit.Record{Principal: "alice", Tool: "describe_workflow", Args: wf("order-123")},
		audit.Record{Principal: "alice", Tool: "describe_workflow", Args: wf("order-1234")},
		audit.Record{Principal: "alice", Tool: "list_workflows", Args: []audit.Arg{{Name: "query", Value: "WorkflowId = 'order-123'"}}},
		audit.Record{Principal: "alice", Tool: "describe_workflow", Args: wf(`"order-123"`)},
		audit.Record{Principal: "alice", Tool: "describe_workflow", Args: wf("order-123\x1b[2J")},
		audit.Record{Principal: "bob", Tool: "describe_workflow", Args: wf("order-123")},
	)
	env := baseEnv("PORTHOLE_AUDIT_KEY_FILE=" + keyPath)
	for _, c := range []struct {
		name string
		args []string
		want string // the principal and tool line
	}{
		{"an exact value", []string{"--principal", "alice", "--arg", "workflowId=order-123"}, `alice\s+describe_workflow\s+1\s+ok=1`},
		{"a value holding quotes", []string{"--principal", "alice", "--arg", `workflowId="order-123"`}, `alice\s+describe_workflow\s+1\s+ok=1`},
		{"a value holding an escape", []string{"--principal", "alice", "--arg", "workflowId=order-123\x1b[2J"}, `alice\s+describe_workflow\s+1\s+ok=1`},
		{"a substring", []string{"--principal", "alice", "--arg", "workflowId~order-123"}, `alice\s+describe_workflow\s+4\s+ok=4`},
		{"a substring of a query, split at the first ~", []string{"--tool", "list_workflows", "--arg", "query~= 'order-123'"}, `alice\s+list_workflows\s+1\s+ok=1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := auditReport(t, env, append(c.args, logPath)...)
			toolLines := regexp.MustCompile(`(?m)^\S+\s+(describe_workflow|list_workflows)\s`).FindAllString(out, -1)
			if code != 0 || !regexpLine(out, c.want) || len(toolLines) != 1 {
				t.Fatalf("exit %d; want one line %q:\n%s%s", code, c.want, out, errOut)
			}
			if strings.Contains(out, "bob") || !strings.Contains(out, "Denials are left out") || strings.ContainsRune(out, '\x1b') {
				t.Fatalf("bob's call, no word of the denials, or an escape:\n%q", out)
			}
		})
	}
	if out, errOut, code := auditReport(t, env, "--arg", "workflowId", logPath); code == 0 || out != "" || !strings.Contains(errOut, "name=value") {
		t.Fatalf("--arg without = or ~: exit %d, %s%s; want it refused", code, out, errOut)
	}
}

// TestAQueryIsMatchedAsTemporalReadIt: porthole sends Temporal the query
// printed from its parse, where 'or\der-123' is 'order-123'; the report's
// --arg query~ matched only the text as the client wrote it (found by
// review).
func TestAQueryIsMatchedAsTemporalReadIt(t *testing.T) {
	t.Parallel()
	logPath, keyPath := reportTrail(t, audit.Record{Principal: "alice", Tool: "list_workflows",
		Args: []audit.Arg{{Name: "query", Value: `WorkflowId = 'or\der-123'`}}})
	out, errOut, code := auditReport(t, baseEnv(), "--key-file", keyPath, "--arg", "query~order-123", logPath)
	if code != 0 || !strings.Contains(out, "alice") {
		t.Fatalf("report --arg query~order-123: exit %d, %s%s", code, out, errOut)
	}
}

// TestAuditReportWritesOnePageForAReviewer: --html writes the page, mode
// 0600 (it holds personal data), with the filter that narrowed it, what it
// was verified with (the key file and its id) and the records, escaped;
// with --json it is refused.
func TestAuditReportWritesOnePageForAReviewer(t *testing.T) {
	t.Parallel()
	wf := func(v string) []audit.Arg { return []audit.Arg{{Name: "workflowId", Value: v}} }
	logPath, keyPath := reportTrail(t,
		audit.Record{Principal: "alice", Tool: "describe_workflow", Args: wf("order-123")},
		audit.Record{Principal: "alice", Tool: "describe_workflow", Args: wf(`order-123"><script>alert(1)</script>`)},
		audit.Record{Principal: "bob", Tool: "describe_workflow", Args: wf("order-123")},
	)
	out := filepath.Join(t.TempDir(), "report.html")
	stdout, errOut, code := auditReport(t, baseEnv(), "--key-file", keyPath, "--principal", "alice", "--arg", "workflowId~order-123", "--html", out, logPath)
	if code != 0 || !strings.Contains(stdout, "wrote "+out) {
		t.Fatalf("report --html: exit %d, %s%s", code, stdout, errOut)
	}
	st, err := os.Stat(out)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the page: %v, %v; want mode 0600", st, err)
	}
	b, _ := os.ReadFile(out)
	page := string(b)
	key, _ := readAuditKey(keyPath)
	for _, want := range []string{
		`<div class="verdict partial" id="verdict">`, "Verified: ", "HMAC key file " + keyPath + " (key id " + audit.KeyID(key) + ")",
		`principal &#34;alice&#34;; argument &#34;workflowId&#34; contains &#34;order-123&#34;`,
		`&#34;order-123\&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&#34;`, "This page holds personal data",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "bob") || strings.Contains(page, "<script") {
		t.Errorf("the page holds bob's call, or a script")
	}
	if _, errOut, code := auditReport(t, baseEnv(), "--key-file", keyPath, "--json", "--html", out, logPath); code == 0 || !strings.Contains(errOut, "--json and --html") {
		t.Fatalf("--json with --html: exit %d, %s; want it refused", code, errOut)
	}
}
