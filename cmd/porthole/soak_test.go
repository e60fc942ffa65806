package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/gateway/tokens"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// Load and fault tests. They run briefly in `make test` and for longer with
// `make soak` (PORTHOLE_SOAK=60s). Every loop is bounded in count and time,
// and every address is on loopback.

func soakDuration() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("PORTHOLE_SOAK")); err == nil && d > 0 {
		return d
	}
	return 2 * time.Second
}

// answer is what one raw tools/call came back with.
type answer struct {
	status    int
	requestID string
	isError   bool
	rpcError  string
	text      string
	took      time.Duration
}

var soakClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}, Timeout: 60 * time.Second}

func callRaw(endpoint, token, tool string, args map[string]any) answer {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	resp, err := soakClient.Do(req)
	if err != nil {
		return answer{status: -1, text: err.Error(), took: time.Since(start)}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, requestID: resp.Header.Get("X-Request-Id"), took: time.Since(start)}
	var msg struct {
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &msg)
	switch {
	case msg.Error != nil:
		a.rpcError = msg.Error.Message
	case msg.Result != nil:
		a.isError = msg.Result.IsError
		if len(msg.Result.Content) > 0 {
			a.text = msg.Result.Content[0].Text
		}
	}
	return a
}

// adminOf waits for the admin listener's address in a porthole's log.
func adminOf(t *testing.T, p *process) string {
	t.Helper()
	var admin string
	found := temporaltest.Poll(10*time.Second, func() bool {
		for _, l := range strings.Split(p.logs.String(), "\n") {
			var line map[string]any
			if json.Unmarshal([]byte(l), &line) == nil && line["msg"] == "serving admin" {
				admin = "http://" + line["addr"].(string)
				return true
			}
		}
		return false
	})
	if !found {
		t.Fatalf("no admin listener:\n%s", p.logs)
	}
	return admin
}

// metric reads the first sample of a series from /metrics.
func metric(t *testing.T, admin, series string) float64 {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	total := 0.0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, series+" ") || strings.HasPrefix(line, series+"{") {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			total += v
		}
	}
	return total
}

func readyz(admin string) int {
	resp, err := http.Get(admin + "/readyz")
	if err != nil {
		return -1
	}
	resp.Body.Close()
	return resp.StatusCode
}

func rssMiB(pid int) float64 { return statusMiB(pid, "VmRSS") }

// statusMiB is a field of /proc/PID/status given in kB (VmRSS, VmHWM), in
// MiB; 0 when it cannot be read.
func statusMiB(pid int, field string) float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			kb, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// soakAuditMaxBytes is the audit file size the load test rotates at: small,
// so that even the 2 s run in `make test` rotates several times and the
// accounting below reads a rotated series.
const soakAuditMaxBytes = 256 << 10

// TestSoakLoad: 64 clients on loopback for a fixed time. No error but 429;
// exactly one call and one result record per answered request, across every
// file the audit log rotated into, and the series verifies whole;
// goroutines back where they were; memory bounded.
func TestSoakLoad(t *testing.T) {
	t.Parallel()
	endpoint, token, p, auditLog := serveHTTP(t, "PORTHOLE_AUDIT_MAX_BYTES="+strconv.Itoa(soakAuditMaxBytes))
	admin := adminOf(t, p)
	before := metric(t, admin, "go_goroutines")
	mix := []struct {
		tool string
		args map[string]any
	}{
		{"describe_workflow", map[string]any{"workflowId": temporaltest.RunningWorkflowID}},
		{"list_workflows", map[string]any{"pageSize": 5}},
		{"count_workflows", map[string]any{"query": "ExecutionStatus = 'Running'"}},
		{"describe_namespace", nil},
		{"get_workflow_history", map[string]any{"workflowId": temporaltest.CompletedWorkflowID}},
	}
	var mu sync.Mutex
	answered := map[string]bool{}
	var ok, limited, bad atomic.Int64
	start := time.Now()
	deadline := start.Add(soakDuration())
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for n := 0; n < 100000 && time.Now().Before(deadline); n++ {
				c := mix[(i+n)%len(mix)]
				a := callRaw(endpoint, token, c.tool, c.args)
				switch {
				case a.status == 200 && !a.isError && a.rpcError == "":
					ok.Add(1)
					mu.Lock()
					answered[a.requestID] = true
					mu.Unlock()
				case a.status == http.StatusTooManyRequests:
					limited.Add(1)
				default:
					if bad.Add(1) <= 5 {
						t.Errorf("%s: status %d isError %v %q %q", c.tool, a.status, a.isError, a.rpcError, a.text)
					}
				}
			}
		}(i)
	}
	wg.Wait()
	loaded := time.Since(start)
	if rss := rssMiB(p.cmd.Process.Pid); rss > 128 {
		t.Errorf("porthole's RSS after the load is %.0f MiB", rss)
	}
	soakClient.CloseIdleConnections()
	var after float64
	if !temporaltest.Poll(5*time.Second, func() bool { after = metric(t, admin, "go_goroutines"); return after <= before+3 }) {
		t.Errorf("goroutines %v before the load, %v after", before, after)
	}
	p.stop(t)
	t.Logf("%d answered, %d rate limited, %d other in %s", ok.Load(), limited.Load(), bad.Load(), soakDuration())
	if ok.Load() == 0 {
		t.Fatal("nothing was answered")
	}
	series := readAuditSeries(t, auditLog)
	t.Logf("audit: %d bytes in %d files over %s, %.1f MiB a minute", series.bytes, len(series.files), loaded.Round(time.Millisecond),
		float64(series.bytes)/(1<<20)/loaded.Minutes())
	if len(series.files) < 2 {
		t.Fatalf("the audit log never rotated at %d bytes (%d bytes written); the accounting read no series", soakAuditMaxBytes, series.bytes)
	}
	verifyAuditSeries(t, auditKeyOf(auditLog), series.files)
	for id := range answered {
		if c := series.perRequest[id]; c != [2]int{1, 1} {
			t.Fatalf("request %s left %d call and %d result records, want one of each; read, in chain order: %s",
				id, c[0], c[1], strings.Join(series.files, ", "))
		}
	}
}

// auditSeries is a rotated audit log read whole.
type auditSeries struct {
	files      []string          // in chain order
	bytes      int64             // in all files
	perRequest map[string][2]int // call and result records by request id
}

// readAuditSeries reads the live audit file and every file rotated aside
// from it (named after it with a suffix), in chain order: by the sequence
// number of each file's first record, not by name.
func readAuditSeries(t *testing.T, auditLog string) auditSeries {
	t.Helper()
	paths, err := filepath.Glob(auditLog + "*")
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		path  string
		first uint64
		lines []string
	}
	var files []file
	s := auditSeries{perRequest: map[string][2]int{}}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s.bytes += int64(len(b))
		f := file{path: path, lines: strings.Split(strings.TrimSpace(string(b)), "\n")}
		var first struct{ Seq uint64 }
		if err := json.Unmarshal([]byte(f.lines[0]), &first); err != nil {
			t.Fatalf("%s: the first line is not a record: %v", path, err)
		}
		f.first = first.Seq
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.first, b.first) })
	for _, f := range files {
		s.files = append(s.files, f.path)
		for _, line := range f.lines {
			var r struct{ Kind, RequestID string }
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s: a line is not a record: %v", f.path, err)
			}
			c := s.perRequest[r.RequestID]
			switch r.Kind {
			case "call":
				c[0]++
			case "result":
				c[1]++
			}
			s.perRequest[r.RequestID] = c
		}
	}
	return s
}

// verifyAuditSeries runs `porthole audit verify` over a series, as a
// reviewer would, and requires it whole.
func verifyAuditSeries(t *testing.T, keyPath string, files []string) {
	t.Helper()
	verify := execPorthole(t, baseEnv(), append([]string{"audit", "verify", "--key-file", keyPath}, files...)...)
	out, err := verify.CombinedOutput()
	want := fmt.Sprintf("in %d files", len(files))
	if err != nil || !strings.Contains(string(out), "OK:") || !strings.Contains(string(out), want) {
		t.Fatalf("porthole audit verify over %s: %v\n%s", strings.Join(files, ", "), err, out)
	}
}

// TestTemporalStoppedAndStartedAgain: while Temporal is down every call gets
// a tool error with a sentence within its timeout and /readyz turns unready;
// once it is back porthole recovers without a restart.
func TestTemporalStoppedAndStartedAgain(t *testing.T) {
	t.Parallel()
	temporaltest.Needs(t, "a Temporal dev server of its own")
	hostPort := freePort(t)
	srv, err := temporaltest.Start(context.Background(), temporaltest.Options{HostPort: hostPort})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Stop() }()
	file, token := newToken(t, "soak")
	p, line := startPorthole(t, append(baseEnv("PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+file,
		"PORTHOLE_CACHE_TTL=0", "PORTHOLE_CALL_TIMEOUT=2s"), "TEMPORAL_ADDRESS="+hostPort), "serving MCP", "serve")
	endpoint, admin := line["endpoint"].(string), adminOf(t, p)
	if readyz(admin) != 200 {
		t.Fatal("not ready with Temporal up")
	}
	before := metric(t, admin, "go_goroutines")

	var phase atomic.Int32 // 0 up, 1 down, 2 back
	var failedWhileDown, okAfter atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 100000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				ph := phase.Load()
				a := callRaw(endpoint, token, "describe_namespace", nil)
				if a.took > 5*time.Second {
					t.Errorf("a call took %s, beyond its 2s timeout", a.took)
				}
				switch {
				case a.status == 200 && !a.isError:
					if ph == 2 {
						okAfter.Add(1)
					}
				case a.status == 200 && a.isError:
					if !strings.Contains(a.text, "Temporal did not answer") {
						t.Errorf("a failed call says %q, want the sentence", a.text)
					}
					if ph == 1 {
						failedWhileDown.Add(1)
					}
				default:
					t.Errorf("status %d %q", a.status, a.rpcError)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	phase.Store(1)
	srv.Stop()
	temporaltest.Eventually(t, 15*time.Second, "/readyz to turn unready", func() bool { return readyz(admin) == 503 })
	temporaltest.Eventually(t, 15*time.Second, "calls to fail while Temporal is down", func() bool { return failedWhileDown.Load() > 0 })
	if srv, err = temporaltest.Start(context.Background(), temporaltest.Options{HostPort: hostPort}); err != nil {
		t.Fatal(err)
	}
	phase.Store(2)
	temporaltest.Eventually(t, 60*time.Second, "/readyz to turn ready again", func() bool { return readyz(admin) == 200 })
	temporaltest.Eventually(t, 60*time.Second, "calls to succeed again", func() bool { return okAfter.Load() > 0 })
	close(stop)
	wg.Wait()
	soakClient.CloseIdleConnections()
	temporaltest.Eventually(t, 10*time.Second, "goroutines to settle", func() bool { return metric(t, admin, "go_goroutines") <= before+5 })
}

// TestSlowTemporal: calls to a Temporal that answers too slowly time out
// with a sentence, and one principal's pile of slow calls does not starve
// another principal's.
func TestSlowTemporal(t *testing.T) {
	t.Parallel()
	proxy, err := temporaltest.StartDelayProxy(devServer(t).FrontendHostPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	file := filepath.Join(t.TempDir(), "tokens")
	alice, _ := tokens.Append(file, "alice")
	bob, _ := tokens.Append(file, "bob")
	_, line := startPorthole(t, append(temporalEnv(t, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+file,
		"PORTHOLE_CACHE_TTL=0", "PORTHOLE_CALL_TIMEOUT=1s"), "TEMPORAL_ADDRESS="+proxy.Addr), "serving MCP", "serve")
	endpoint := line["endpoint"].(string)
	proxy.SetDelay(3 * time.Second)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := callRaw(endpoint, alice, "describe_namespace", nil)
			if !a.isError || !strings.Contains(a.text, "Temporal did not answer") {
				t.Errorf("alice's slow call: %+v", a)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	a := callRaw(endpoint, bob, "describe_workflow", map[string]any{"workflowId": temporaltest.RunningWorkflowID})
	if a.took > 3*time.Second || !a.isError || !strings.Contains(a.text, "Temporal did not answer") {
		t.Errorf("bob behind alice's slow calls: took %s, %+v", a.took, a)
	}
	wg.Wait()
	proxy.SetDelay(0)
	temporaltest.Eventually(t, 20*time.Second, "calls to succeed once Temporal is quick again", func() bool {
		a := callRaw(endpoint, bob, "describe_namespace", nil)
		return a.status == 200 && !a.isError
	})
}

// TestAuditSinkThatStopsRefusesCalls: when the audit sink stops taking
// records (a pipe whose reader stalls), calls are refused within the audit
// timeout and none reaches Temporal.
func TestAuditSinkThatStopsRefusesCalls(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "audit.pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	stall := make(chan struct{})
	// The reader is there before porthole starts: porthole refuses a FIFO
	// nobody reads. Read-write, so that reading waits for data rather than
	// ending while no writer has the FIFO open.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer f.Close()
		buf := make([]byte, 4096)
		for {
			select {
			case <-stall:
				<-time.After(time.Minute) // keep the pipe open, read nothing
				return
			default:
			}
			if _, err := f.Read(buf); err != nil {
				return
			}
		}
	}()
	file, token := newToken(t, "soak")
	p, line := startPorthole(t, temporalEnv(t, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+file,
		"PORTHOLE_CACHE_TTL=0", "PORTHOLE_AUDIT_LOG="+fifo, "PORTHOLE_AUDIT_TIMEOUT=300ms"), "serving MCP", "serve")
	endpoint, admin := line["endpoint"].(string), adminOf(t, p)
	if a := callRaw(endpoint, token, "describe_namespace", nil); a.status != 200 || a.isError {
		t.Fatalf("with a working sink: %+v", a)
	}
	close(stall)
	refused := false
	for i := 0; i < 2000 && !refused; i++ { // fill the pipe's buffer
		refused = strings.Contains(callRaw(endpoint, token, "describe_namespace", nil).rpcError, "could not write the audit record")
	}
	if !refused {
		t.Fatal("no call was refused although the audit sink stopped")
	}
	reads := metric(t, admin, "porthole_temporal_read_duration_seconds_count")
	// Refused within the audit timeout (300 ms) plus the machine's delay: a
	// bound of 5 s, far below the 30 s call timeout a hung call would
	// reach, still tells a refusal from a hang on a saturated machine.
	for i := 0; i < 10; i++ {
		a := callRaw(endpoint, token, "describe_workflow", map[string]any{"workflowId": temporaltest.RunningWorkflowID})
		if !strings.Contains(a.rpcError, "could not write the audit record") || a.took > 5*time.Second {
			t.Fatalf("call %d with a stalled sink: %+v", i, a)
		}
	}
	if after := metric(t, admin, "porthole_temporal_read_duration_seconds_count"); after != reads {
		t.Fatalf("Temporal reads went from %v to %v while every call was refused", reads, after)
	}
}

func TestAnAuditSinkThatCannotBeWrittenStopsTheStart(t *testing.T) {
	t.Parallel()
	file, _ := newToken(t, "soak")
	// porthole dials Temporal before it opens the audit log.
	cmd := execPorthole(t, temporalEnv(t, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+file, "PORTHOLE_AUDIT_LOG=/dev/full"), "serve")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "opening the audit log") {
		t.Fatalf("porthole started with an audit sink that cannot be written: %v\n%s", err, out)
	}
}
