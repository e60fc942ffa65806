// Package tracetest runs a real trace backend for tests and the bench:
// Jaeger v2 (`make jaeger` builds it into the Makefile's cache and exports
// PORTHOLE_JAEGER), taking OTLP over HTTP and answering its query API, on
// free loopback ports, keeping traces in memory. It is not part of the
// porthole binary (cmd/porthole's dependency test).
package tracetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BinEnv names the Jaeger binary; the Makefile exports it.
const BinEnv = "PORTHOLE_JAEGER"

// Jaeger is a running Jaeger.
type Jaeger struct {
	// OTLPEndpoint is the OTLP/HTTP base URL porthole exports to
	// (OTEL_EXPORTER_OTLP_ENDPOINT).
	OTLPEndpoint string
	// Query is the base URL of the query API.
	Query string
	cmd   *exec.Cmd
	done  chan struct{}
	log   string
}

// Start runs Jaeger for the test and stops it at the end; under -short it
// skips, and without the binary it fails with the command that builds it.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Jaeger, which -short (make unit) leaves out; make test builds and runs it")
	}
	j, err := Launch(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.Stop)
	return j
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// config is Jaeger's configuration: OTLP over HTTP in, memory storage, the
// query API, and no listener on a fixed port (the collector's own metrics
// are off).
const config = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// Launch is Start outside a test: Jaeger with its configuration in dir.
func Launch(dir string) (*Jaeger, error) {
	bin := os.Getenv(BinEnv)
	if bin == "" {
		return nil, errors.New("PORTHOLE_JAEGER is not set: run the tests with make test, or make jaeger and set PORTHOLE_JAEGER to the binary it builds")
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("Jaeger is not built at %s: run make jaeger", bin)
	}
	var ports [3]int
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, config, ports[0], ports[1], ports[2]), 0o600); err != nil {
		return nil, err
	}
	j := &Jaeger{OTLPEndpoint: "http://127.0.0.1:" + strconv.Itoa(ports[0]), Query: "http://127.0.0.1:" + strconv.Itoa(ports[1]), log: filepath.Join(dir, "jaeger.log"), done: make(chan struct{})}
	logf, err := os.Create(j.log)
	if err != nil {
		return nil, err
	}
	j.cmd = exec.Command(bin, "--config", "file:"+cfg)
	j.cmd.Stdout, j.cmd.Stderr = logf, logf
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := j.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting Jaeger: %w", err)
	}
	go func() { _ = j.cmd.Wait(); logf.Close(); close(j.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-j.done:
			b, _ := os.ReadFile(j.log)
			return nil, fmt.Errorf("Jaeger exited at start:\n%s", b)
		default:
		}
		if resp, err := http.Get(j.Query + "/api/services"); err == nil {
			resp.Body.Close()
			if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(ports[0]), time.Second); err == nil {
				c.Close()
				return j, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	j.Stop()
	b, _ := os.ReadFile(j.log)
	return nil, fmt.Errorf("Jaeger did not answer within 60 s:\n%s", b)
}

// Stop stops Jaeger.
func (j *Jaeger) Stop() {
	if j.cmd == nil || j.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-j.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
		<-j.done
	}
	j.cmd = nil
}

// Span is a span as Jaeger's query API returns it.
type Span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	} `json:"tags"`
	Logs []struct {
		Fields []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"fields"`
	} `json:"logs"`
	ProcessID string `json:"processID"`
}

// Tag is the value of a span's tag key, or nil.
func (s Span) Tag(key string) any {
	for _, t := range s.Tags {
		if t.Key == key {
			return t.Value
		}
	}
	return nil
}

// Events are the span's events (Jaeger's logs), in order, each as its
// name followed by " key=value" for each of its attributes.
func (s Span) Events() []string {
	var out []string
	for _, l := range s.Logs {
		name, attrs := "", ""
		for _, f := range l.Fields {
			if f.Key == "event" {
				name = fmt.Sprint(f.Value)
			} else {
				attrs += fmt.Sprintf(" %s=%v", f.Key, f.Value)
			}
		}
		out = append(out, name+attrs)
	}
	return out
}

// Parent is the span id of the span's parent in its trace, or "".
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" && r.TraceID == s.TraceID {
			return r.SpanID
		}
	}
	return ""
}

// Trace is one trace's spans, and the raw answer (for a scan of
// everything Jaeger holds of it).
type Trace struct {
	Spans []Span
	Raw   []byte
}

// Trace asks for a trace by id, waiting up to timeout for every span
// named to arrive (spans are exported in batches, so a trace can be seen
// in part).
func (j *Jaeger) Trace(id string, names []string, timeout time.Duration) (*Trace, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		tr, err := j.trace(id)
		missing := ""
		if err == nil {
			for _, n := range names {
				if !tr.has(n) {
					missing = n
					break
				}
			}
		}
		if err == nil && missing == "" {
			return tr, nil
		}
		if err != nil {
			last = err
		} else {
			last = fmt.Errorf("trace %s has %d spans so far, not yet %q", id, len(tr.Spans), missing)
		}
		if time.Now().After(deadline) {
			return tr, last
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (tr *Trace) has(name string) bool {
	for _, s := range tr.Spans {
		if s.OperationName == name {
			return true
		}
	}
	return false
}

func (j *Jaeger) trace(id string) (*Trace, error) {
	resp, err := http.Get(j.Query + "/api/traces/" + id)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return &Trace{Raw: b}, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/traces/%s: %d %s", id, resp.StatusCode, b)
	}
	var doc struct {
		Data []struct {
			Spans []Span `json:"spans"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	tr := &Trace{Raw: b}
	for _, d := range doc.Data {
		tr.Spans = append(tr.Spans, d.Spans...)
	}
	return tr, nil
}

// Services lists the services Jaeger has spans of.
func (j *Jaeger) Services() ([]string, error) {
	resp, err := http.Get(j.Query + "/api/services")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var doc struct {
		Data []string `json:"data"`
	}
	return doc.Data, json.NewDecoder(resp.Body).Decode(&doc)
}
