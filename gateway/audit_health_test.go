package gateway

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/audit"
)

// answeringReader is a fakeReader whose Temporal answers /readyz's ping,
// so that readiness turns on the audit log alone.
type answeringReader struct{ *fakeReader }

func (answeringReader) Ping(context.Context) error { return nil }

// adminOf serves g's admin handler for the test.
func adminOf(t *testing.T, g *Server) (readyz func() (int, string), metric func(series string) string) {
	t.Helper()
	srv := httptest.NewServer(g.AdminHandler())
	t.Cleanup(srv.Close)
	readyz = func() (int, string) {
		resp, body := send(t, http.MethodGet, srv.URL+"/readyz", nil, "")
		return resp.StatusCode, body
	}
	metric = func(series string) string {
		_, body := send(t, http.MethodGet, srv.URL+"/metrics", nil, "")
		for _, line := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(line, series+" "); ok {
				return v
			}
		}
		return "absent"
	}
	return readyz, metric
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAuditMetricsMoveOnWrites: each record a call writes is timed, and the
// bytes the sink took are counted: as many as the file holds.
func TestAuditMetricsMoveOnWrites(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	log, err := audit.Open(audit.Config{Path: path, Key: testAuditKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	g, err := NewServer(answeringReader{&fakeReader{}}, Options{Namespace: "default", Audit: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	_, metric := adminOf(t, g)
	cs := connect(t, g)
	for i := 0; i < 3; i++ {
		cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "describe_namespace"})
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for series, want := range map[string]string{
		`porthole_audit_write_duration_seconds_count{failed="false"}`: "6", // a call and a result record each
		`porthole_audit_write_duration_seconds_count{failed="true"}`:  "0",
		`porthole_audit_written_bytes_total`:                          strconv.FormatInt(fi.Size(), 10),
		`porthole_audit_write_failures_total{reason="write"}`:         "0",
		`porthole_audit_sink_ok`:                                      "1",
	} {
		if got := metric(series); got != want {
			t.Errorf("%s = %s, want %s", series, got, want)
		}
	}
	if got := metric("porthole_audit_free_bytes"); got == "absent" || got == "0" {
		t.Errorf("porthole_audit_free_bytes = %s for a file", got)
	}
}

var testAuditKey = []byte(strings.Repeat("k", 32))

// TestReadyzIsNotReadyWhileTheAuditSinkHoldsWrites: a log shipper that
// stops reading the audit pipe holds porthole's writes. Calls are refused
// (as before), and now /readyz says why and the metrics show it; once the
// shipper reads again, both recover without a call, since a porthole that
// is not ready gets none.
func TestReadyzIsNotReadyWhileTheAuditSinkHoldsWrites(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "audit.pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	shipper, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(audit.Config{Path: fifo, Key: testAuditKey, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	drained := make(chan struct{})
	t.Cleanup(func() {
		close(drained)
		log.Close()
		shipper.Close()
	})
	r := &fakeReader{}
	g, err := NewServer(answeringReader{r}, Options{Namespace: "default", Audit: log, Logger: nopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	readyz, metric := adminOf(t, g)
	if status, body := readyz(); status != http.StatusOK {
		t.Fatalf("/readyz with the shipper reading: %d %q", status, body)
	}

	// Nobody reads the pipe now: calls fill it until the sink holds a write.
	cs := connect(t, g)
	refused := false
	for i := 0; i < 2000 && !refused; i++ {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "describe_namespace"})
		refused = err != nil && strings.Contains(err.Error(), "could not write the audit record")
	}
	if !refused {
		t.Fatal("2000 calls into a pipe nobody reads, and none refused")
	}
	status, body := readyz()
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "the audit log did not take a record within 100ms") {
		t.Fatalf("/readyz with the audit pipe full: %d %q", status, body)
	}
	if got := metric("porthole_audit_sink_ok"); got != "0" {
		t.Errorf("porthole_audit_sink_ok = %s with the pipe full, want 0", got)
	}
	if got := metric(`porthole_audit_write_failures_total{reason="timeout"}`); got == "0" || got == "absent" {
		t.Errorf(`porthole_audit_write_failures_total{reason="timeout"} = %s with the pipe full`, got)
	}
	if got := metric(`porthole_audit_write_duration_seconds_count{failed="true"}`); got == "0" || got == "absent" {
		t.Errorf(`porthole_audit_write_duration_seconds_count{failed="true"} = %s with the pipe full`, got)
	}

	// The shipper reads again; no call comes.
	go func() {
		buf := make([]byte, 64<<10)
		for {
			select {
			case <-drained:
				return
			default:
			}
			if _, err := shipper.Read(buf); err != nil && err != io.EOF {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	waitUntil(t, "/readyz ready once the pipe is read again", func() bool {
		status, _ := readyz()
		return status == http.StatusOK
	})
	if got := metric("porthole_audit_sink_ok"); got != "1" {
		t.Errorf("porthole_audit_sink_ok = %s with the pipe read again, want 1", got)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "describe_namespace"}); err != nil {
		t.Fatalf("a call once the pipe is read again: %v", err)
	}
}

// TestACallIsRefusedWithASentenceWhileTheAuditDiskIsLow: with less free
// space than PORTHOLE_AUDIT_MIN_FREE_BYTES, a call is refused at once with
// a sentence that says why, before dispatch, and leaves no record (the
// space kept free is for the results of calls already made); /readyz says
// why and the metrics count it.
func TestACallIsRefusedWithASentenceWhileTheAuditDiskIsLow(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	log, err := audit.Open(audit.Config{Path: path, Key: testAuditKey, MinFreeBytes: math.MaxInt64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	r := &fakeReader{}
	g, err := NewServer(answeringReader{r}, Options{Namespace: "default", Audit: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	readyz, metric := adminOf(t, g)
	cs := connect(t, g)
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "describe_namespace"})
	if err == nil || !strings.Contains(err.Error(), "porthole's audit log is almost out of disk space, so the call was not made; retry later") {
		t.Fatalf("a call with the audit disk low: %v, want the low-space sentence", err)
	}
	if _, err := cs.ListTools(context.Background(), nil); err == nil {
		t.Fatal("tools/list was answered with the audit disk low")
	}
	if n := r.count(); n != 0 {
		t.Fatalf("%d reads reached Temporal with the audit disk low", n)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), `"kind":"call"`) {
		t.Fatalf("a refused call left a record:\n%s", b)
	}
	if status, body := readyz(); status != http.StatusServiceUnavailable || !strings.Contains(body, "bytes free, less than the 9223372036854775807 kept free (PORTHOLE_AUDIT_MIN_FREE_BYTES)") {
		t.Fatalf("/readyz with the audit disk low: %d %q", status, body)
	}
	if got := metric(`porthole_audit_write_failures_total{reason="low_space"}`); got != "2" {
		t.Errorf(`porthole_audit_write_failures_total{reason="low_space"} = %s after two refusals, want 2`, got)
	}
	if got := metric("porthole_audit_sink_ok"); got != "0" {
		t.Errorf("porthole_audit_sink_ok = %s with the audit disk low, want 0", got)
	}
}
