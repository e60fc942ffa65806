package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/audit"
)

// chromiumEnv names the Chromium the browser tests drive; the Makefile sets
// it to Debian's, which `make chromium` installs when missing.
const chromiumEnv = "PORTHOLE_CHROMIUM"

// chromium is the browser's path. It skips under -short (make unit) and
// fails with the install command when the browser is missing: a test that
// skipped would pass on a machine that never looked at the page.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium, which -short (make unit) leaves out; make test runs it")
	}
	bin := os.Getenv(chromiumEnv)
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("chromium"); err != nil {
			t.Fatalf("Chromium is not installed: run make chromium (apt-get install -y chromium, as root), or set %s", chromiumEnv)
		}
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s=%s: %v; run make chromium (apt-get install -y chromium, as root)", chromiumEnv, bin, err)
	}
	return bin
}

// browser is a tab of a fresh headless Chromium with more options, for at
// most a minute; it closes when the test ends.
func browser(t *testing.T, more ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	// The flags a root user on a closed network needs (the machine notes of
	// this project's CI): no sandbox as root, and none of the browser's own
	// traffic, which would be refused.
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]), chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(opts, more...)...)
	ctx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(func() { cancelTab(); cancelAlloc(); cancel() })
	return ctx
}

// pageVisit is what the browser saw while it opened a page.
type pageVisit struct {
	mu       sync.Mutex
	console  []string // console API calls, exceptions, browser log warnings and errors
	requests []string // every request's URL, the page's own included
	dialogs  []string
}

func (v *pageVisit) note(list *[]string, s string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	*list = append(*list, s)
}

// openPage opens a file in a fresh headless Chromium, recording what the
// page logs and requests, runs check against it, and keeps a screenshot
// in shot (the whole page, or the viewport of width x height when
// viewportOnly).
func openPage(t *testing.T, file, shot string, width, height int64, viewportOnly bool, check func(ctx context.Context)) *pageVisit {
	t.Helper()
	ctx := browser(t, chromedp.WindowSize(int(width), int(height)))
	v := &pageVisit{}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			v.note(&v.console, "console."+string(ev.Type))
		case *runtime.EventExceptionThrown:
			v.note(&v.console, "exception: "+ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelWarning || ev.Entry.Level == cdplog.EntryLevelError {
				v.note(&v.console, string(ev.Entry.Level)+": "+ev.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			v.note(&v.requests, ev.Request.URL)
		case *page.EventJavascriptDialogOpening:
			v.note(&v.dialogs, ev.Message)
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}); err != nil {
		t.Fatalf("starting %s: %v", chromium(t), err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height), chromedp.Navigate("file://"+file), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	check(ctx)
	capture := chromedp.FullScreenshot(100) // 100: a PNG
	if viewportOnly {
		capture = chromedp.CaptureScreenshot()
	}
	png, err := chromedp.Run(ctx, capture)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	return v
}

// evaluate runs a script in the page through the DevTools protocol (which
// the page's Content-Security-Policy does not govern).
func evaluate[T any](t *testing.T, ctx context.Context, script string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](script))
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return v
}

// artefact is where a test keeps a file for people to look at after it:
// $PORTHOLE_TEST_ARTEFACTS, or test-artefacts/ at the repository's root
// (ignored by git).
func artefact(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("PORTHOLE_TEST_ARTEFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "test-artefacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// plantedValues are what a hostile client sends as arguments, each of
// which must reach the page as text: markup that would run a script if it
// were read as HTML, a bidi override that would reorder the page, and
// 100 KB.
var plantedValues = []string{
	`<script>window.pwned=1;alert(1)</script>`,
	`"><img src=x onerror="window.pwned=2;alert(2)">`,
	"order-\u202e321-redro",
	strings.Repeat("A", 100<<10),
}

// TestTheReportPageRendersInABrowserRunningNothingAndFetchingNothing: a
// trail the e2e suite's way (real calls through porthole against the real
// Temporal dev server, refusals of bad tokens, and calls carrying planted
// hostile values), reported with --html and opened from disk in headless
// Chromium: no console message, no exception, no dialog, no request but
// the file itself, no script element, the planted values shown as text,
// the style sheet applied under its hash, and the charts drawn. The
// screenshot is kept as an artefact.
func TestTheReportPageRendersInABrowserRunningNothingAndFetchingNothing(t *testing.T) {
	t.Parallel()
	chromium(t)
	endpoint, token, p, auditLog := serveHTTP(t)
	cs := connectHTTP(t, endpoint, &recordingTransport{token: token})
	ctx := context.Background()
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"describe_namespace", map[string]any{}},
		{"list_workflows", map[string]any{"pageSize": 5}},
		{"count_workflows", map[string]any{}},
		{"list_workflows", map[string]any{"query": "WorkflowId = '<script>alert(3)</script>'"}},
	} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: call.tool, Arguments: call.args}); err != nil {
			t.Logf("%s: %v", call.tool, err)
		}
	}
	for _, v := range plantedValues {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "describe_workflow", Arguments: map[string]any{"workflowId": v}}); err != nil {
			t.Logf("describe_workflow of a planted value: %v", err)
		}
	}
	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer ph_not-a-real-token")
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	cs.Close()
	p.stop(t)

	out := filepath.Join(t.TempDir(), "report.html")
	if stdout, errOut, code := auditReport(t, baseEnv(), "--key-file", auditKeyOf(auditLog), "--html", out, auditLog); code != 0 {
		t.Fatalf("report --html: exit %d, %s%s", code, stdout, errOut)
	}
	shot := artefact(t, "audit-report-e2e.png")
	start := time.Now()
	visit := openPage(t, out, shot, 1280, 900, false, func(ctx context.Context) {
		if n := evaluate[int](t, ctx, `document.scripts.length`); n != 0 {
			t.Errorf("the page holds %d script elements", n)
		}
		if pwned := evaluate[string](t, ctx, `typeof window.pwned`); pwned != "undefined" {
			t.Errorf("a planted script ran: window.pwned is %s", pwned)
		}
		if n := evaluate[int](t, ctx, `[...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length`); n != 0 {
			t.Errorf("%d elements carry an event handler", n)
		}
		text := evaluate[string](t, ctx, `document.body.innerText`)
		for _, want := range []string{`"<script>window.pwned=1;alert(1)</script>"`, `"\"><img src=x onerror=\"window.pwned=2;alert(2)\">"`,
			`"order-\u202e321-redro"`, "(the first 256 of 4096 bytes)", "Verified: ", "HMACs checked", "e2e-agent", "unauthenticated"} {
			if !strings.Contains(text, want) {
				t.Errorf("the page does not show %q as text", want)
			}
		}
		// The style sheet applied: its hash in the policy matched.
		if w := evaluate[string](t, ctx, `getComputedStyle(document.getElementById('verdict')).borderLeftWidth`); w != "6px" {
			t.Errorf("the verdict's border is %q, not the style sheet's 6px: was the style refused?", w)
		}
		titles := evaluate[[]string](t, ctx, `[...document.querySelectorAll('svg[role="img"] > title')].map(e => e.textContent)`)
		for _, want := range []string{"Calls per principal over time", "Outcomes over time (of the calls made, and denials)", "Top tools (calls)", "Denials by reason", "Denials by client address"} {
			if !slices.Contains(titles, want) {
				t.Errorf("no chart %q among %q", want, titles)
			}
		}
		if n := evaluate[int](t, ctx, `document.querySelectorAll('svg rect').length`); n < 10 {
			t.Errorf("the charts hold %d bars", n)
		}
	})
	t.Logf("the page opened, was checked and captured in %s; screenshot: %s", time.Since(start).Round(time.Millisecond), shot)
	if len(visit.console) > 0 || len(visit.dialogs) > 0 {
		t.Errorf("the page logged %q and opened dialogs %q", visit.console, visit.dialogs)
	}
	if len(visit.requests) != 1 || visit.requests[0] != "file://"+out {
		t.Errorf("the page made requests %q; want only its own file", visit.requests)
	}
}

// docsScreenshotEnv, when set, names where TestTheReportPageForTheDocs
// writes the screenshot docs/audit.md shows (make report-screenshot).
const docsScreenshotEnv = "PORTHOLE_DOCS_SCREENSHOT"

// TestTheReportPageForTheDocs draws the page of a synthetic week (five
// principals, a burst of rate-limited calls, strangers' bad tokens),
// signed and checkpointed, verified with the key, the public key and the
// checkpoints, and keeps the top of it as docs/audit-report.png. It runs
// only when asked to, with $PORTHOLE_DOCS_SCREENSHOT.
func TestTheReportPageForTheDocs(t *testing.T) {
	shot := os.Getenv(docsScreenshotEnv)
	if shot == "" {
		t.Skipf("writes docs/audit-report.png when %s names it (make report-screenshot)", docsScreenshotEnv)
	}
	dir := t.TempDir()
	logPath, keyPath, pubPath, checkpointFile := filepath.Join(dir, "audit.log"), filepath.Join(dir, "audit.key"), filepath.Join(dir, "signing.pub"), filepath.Join(dir, "checkpoints")
	key := []byte("0123456789abcdef0123456789abcdef")
	privPEM, pubPEM, err := audit.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := audit.ParseSigningKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	for path, b := range map[string][]byte{keyPath: key, pubPath: pubPEM} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	l, err := audit.Open(audit.Config{Path: logPath, Key: key, Signer: signer, CheckpointPath: checkpointFile, CheckpointEvery: 100, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	write := func(r audit.Record) {
		if err := l.Write(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(27, 27))
	principals := []string{"ci-agent", "alice", "dashboard", "oauth:corp:bob", "claude-code-laptop"}
	tools := []string{"list_workflows", "describe_workflow", "get_workflow_history", "count_workflows", "describe_task_queue", "list_schedules"}
	for i := range 420 {
		now = now.Add(time.Duration(10+rng.IntN(30)) * time.Minute)
		p, tool := principals[min(rng.IntN(7), 4)], tools[min(rng.IntN(8), 5)]
		outcome := audit.OutcomeOK
		switch {
		case rng.IntN(20) == 0:
			outcome = audit.OutcomeToolError
		case rng.IntN(30) == 0:
			outcome = audit.OutcomeInvalid
		case now.Weekday() == time.Thursday && p == "ci-agent" && rng.IntN(2) == 0:
			outcome = audit.OutcomeRateLimited
		}
		id := fmt.Sprint("req-", i)
		args := []audit.Arg{{Name: "workflowId", Value: fmt.Sprintf("order-%d", 100+rng.IntN(40))}}
		if tool == "list_workflows" || tool == "count_workflows" {
			args = []audit.Arg{{Name: "query", Value: "ExecutionStatus = 'Failed'"}}
		}
		addr := fmt.Sprintf("10.0.%d.%d", 1+slices.Index(principals, p), 20)
		write(audit.Record{Kind: audit.KindCall, RequestID: id, Principal: p, ClientAddr: addr, Transport: "http", Method: "tools/call", Tool: tool, Args: args})
		write(audit.Record{Kind: audit.KindResult, RequestID: id, Principal: p, Method: "tools/call", Tool: tool, Outcome: outcome, Duration: 40 * time.Millisecond})
		if rng.IntN(9) == 0 {
			write(audit.Record{Kind: audit.KindDenial, ClientAddr: fmt.Sprint("203.0.113.", 7+rng.IntN(3)), Transport: "http", Outcome: audit.OutcomeUnauthenticated, Status: 401, Reason: "a bearer token that matches no principal"})
		}
	}
	write(audit.Record{Kind: audit.KindDenials, ClientAddr: "198.51.100.23", Transport: "http", Count: 14, First: now.Add(-time.Minute), Last: now,
		Groups: []audit.DenialGroup{{Count: 14, Outcome: audit.OutcomeUnauthenticated, Status: 401, Reason: "no bearer token"}}})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Run where the files are, so the page names them as a reviewer would.
	report := execPorthole(t, baseEnv(), "audit", "report", "--key-file", filepath.Base(keyPath), "--public-key", filepath.Base(pubPath),
		"--checkpoints", filepath.Base(checkpointFile), "--html", "report.html", filepath.Base(logPath))
	report.Dir = dir
	if out, err := report.CombinedOutput(); err != nil {
		t.Fatalf("report --html: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "report.html")
	abs, err := filepath.Abs(shot)
	if err != nil {
		t.Fatal(err)
	}
	visit := openPage(t, out, abs, 1200, 1400, true, func(context.Context) {})
	if len(visit.console) > 0 || len(visit.requests) != 1 {
		t.Errorf("the page logged %q and made requests %q", visit.console, visit.requests)
	}
	t.Logf("wrote %s", abs)
}

// TestTheBrowserCheckSeesWhatAPageDoes: a page that logs, throws, opens a
// dialog and fetches, opened the same way, is seen doing each; so the
// report page's silence is the page's, not a deaf check.
func TestTheBrowserCheckSeesWhatAPageDoes(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "noisy.html")
	noisy := `<!DOCTYPE html><html><head><title>noisy</title></head><body><p>noisy</p><script>
console.error("planted"); fetch("http://127.0.0.1:1/beacon").catch(() => {}); alert("planted"); window.pwned = 1; throw new Error("planted");
</script></body></html>`
	if err := os.WriteFile(file, []byte(noisy), 0o600); err != nil {
		t.Fatal(err)
	}
	visit := openPage(t, file, filepath.Join(t.TempDir(), "noisy.png"), 400, 300, true, func(ctx context.Context) {
		if n := evaluate[int](t, ctx, `document.scripts.length`); n != 1 {
			t.Errorf("document.scripts.length = %d, want the planted 1", n)
		}
		if pwned := evaluate[string](t, ctx, `typeof window.pwned`); pwned != "number" {
			t.Errorf("window.pwned is %s; the planted script did not run", pwned)
		}
	})
	joined := strings.Join(visit.console, "\n")
	if !strings.Contains(joined, "console.error") || !strings.Contains(joined, "exception") || len(visit.dialogs) != 1 || len(visit.requests) < 2 {
		t.Fatalf("the check saw console %q, dialogs %q, requests %q; want the planted error, exception, dialog and fetch", visit.console, visit.dialogs, visit.requests)
	}
}
