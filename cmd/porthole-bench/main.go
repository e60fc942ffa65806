// Command porthole-bench measures porthole side by side with what it is
// built from, in one run, against a real Temporal dev server:
//
//  1. sdk: the Temporal SDK's DescribeWorkflowExecution, called directly as
//     porthole's adapter calls it;
//  2. hop: a plain HTTP handler making the same read, no MCP: the floor for
//     any server between a client and Temporal;
//  3. bare: a bare go-sdk streamable HTTP server with the same tool and no
//     hardening (a subprocess of this binary, which also serves hop);
//  4. porthole: the porthole binary with its whole chain (auth, strict
//     decoding, rate limits set high, audit to a file, redaction, policy),
//     cache off;
//  5. cached: the same, answering from its coalescing cache;
//  6. echo: the bare server's echo tool, which reads nothing: the ceiling
//     for an answer from a cache.
//
// The modes take turns in rounds. It writes docs/performance.md (a table,
// the machine, the command) and an SVG chart. Compare ratios within one
// run: the load generator, porthole and the dev server share the machine's
// cores.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/porthole-dev/porthole/gateway/limit"
	"github.com/porthole-dev/porthole/gateway/limit/redislimit"
	"github.com/porthole-dev/porthole/gateway/limit/redislimit/redistest"
	"github.com/porthole-dev/porthole/gateway/oauth/oidctest"
	"github.com/porthole-dev/porthole/gateway/tokens"
	"github.com/porthole-dev/porthole/gateway/tracetest"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

func main() {
	if len(os.Args) > 3 && os.Args[1] == "bare-server" {
		bareServer(os.Args[2], os.Args[3])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "scale" {
		if err := runScale(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "porthole-bench scale:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "porthole-bench:", err)
		os.Exit(1)
	}
}

type result struct {
	mode         string
	concurrency  int
	calls        int
	errors       int
	p50, p90     time.Duration
	p99          time.Duration
	throughput   float64
	cpuPerCall   time.Duration // server process CPU per call, where measured
	allocPerCall float64       // server bytes allocated per call, where measured
	rssMiB       float64
	heapMiB      float64
	temporalRPC  int // Temporal reads the server made, where counted
}

func run() error {
	o, err := parseOptions()
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var r rig
	defer r.close()
	modes, coalesce, err := r.start(ctx, o)
	if err != nil {
		return err
	}
	if o.only != "" {
		// A subset, for a closer look (a profile, a longer run); the
		// report then holds only what was measured.
		keep := map[string]bool{}
		for _, m := range strings.Split(o.only, ",") {
			keep[strings.TrimSpace(m)] = true
		}
		modes = slices.DeleteFunc(modes, func(m mode) bool { return !keep[m.name] })
		if len(modes) == 0 {
			return fmt.Errorf("-modes %q names no mode", o.only)
		}
	}
	var results []result
	for _, n := range o.conc {
		at, err := measureAt(ctx, modes, n, o)
		if err != nil {
			return err
		}
		results = append(results, at...)
	}
	coalesced := coalescing(ctx, coalesce.call, coalesce.srv)
	if err := writeReport(o.out, o.svg, results, o.conc, coalesced, o.duration, o.rounds); err != nil {
		return err
	}
	fmt.Println("== wrote", o.out, "and", o.svg)
	return nil
}

// options are the bench's flags.
type options struct {
	duration      time.Duration
	profile       string // where to write a CPU profile of porthole; empty for none
	only          string // the modes to run, comma-separated; empty for all
	rounds        int
	conc          []int // the concurrency levels
	bin, out, svg string
}

func parseOptions() (options, error) {
	var o options
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "how long each mode runs at each concurrency")
	flag.StringVar(&o.profile, "profile", "", "write a CPU profile of the porthole process, taken while it serves the lowest concurrency's first round, to this file (and of the oauth, redis and traced modes beside it, as .oauth.prof and so on)")
	flag.StringVar(&o.only, "modes", "", "run only these modes (comma-separated), for a closer look; the report holds only them")
	flag.IntVar(&o.rounds, "rounds", 5, "how many turns the modes take at each concurrency, sharing the duration")
	levels := flag.String("concurrency", "1,8,32,64", "comma-separated concurrency levels")
	flag.StringVar(&o.bin, "porthole", "bin/porthole", "the porthole binary")
	flag.StringVar(&o.out, "out", "docs/performance.md", "the report to write")
	flag.StringVar(&o.svg, "svg", "docs/performance.svg", "the chart to write")
	flag.Parse()
	if o.rounds < 1 {
		return o, fmt.Errorf("-rounds must be at least 1")
	}
	for _, s := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return o, fmt.Errorf("bad concurrency %q", s)
		}
		o.conc = append(o.conc, n)
	}
	return o, nil
}

// mode is one way of making the read; srv is the server it calls, nil for
// the SDK called in this process.
type mode struct {
	name string
	call func(context.Context) error
	srv  *server
}

// rig is what the modes run against: the dev server, the SDK client and the
// servers measured. close stops them in the reverse order of their start.
type rig struct {
	stops []func()
}

func (r *rig) onClose(stop func()) { r.stops = append(r.stops, stop) }

func (r *rig) close() {
	for i := len(r.stops) - 1; i >= 0; i-- {
		r.stops[i]()
	}
}

// start starts Temporal and the servers and returns the modes, and the
// cached mode reading the completed workflow, for coalescing.
func (r *rig) start(ctx context.Context, o options) (modes []mode, coalesce mode, err error) {
	fmt.Println("== starting Temporal (visibility throttle raised for benchmarking)")
	srv, stopTemporal, err := temporaltest.StartSeeded(ctx, temporaltest.Options{ExtraArgs: benchDynamicConfig()})
	if err != nil {
		return nil, mode{}, err
	}
	r.onClose(stopTemporal)
	dir, err := os.MkdirTemp("", "porthole-bench-")
	if err != nil {
		return nil, mode{}, err
	}
	r.onClose(func() { os.RemoveAll(dir) })
	self, err := os.Executable()
	if err != nil {
		return nil, mode{}, err
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace, Logger: temporaltest.Quiet()})
	if err != nil {
		return nil, mode{}, err
	}
	r.onClose(c.Close)
	bare, err := r.startServer(ctx, self, []string{"bare-server", srv.FrontendHostPort(), srv.Namespace}, nil, "serving bare")
	if err != nil {
		return nil, mode{}, err
	}
	token, env, err := portholeEnv(dir, srv, o.profile != "")
	if err != nil {
		return nil, mode{}, err
	}
	ph, err := r.startServer(ctx, o.bin, []string{"serve"}, env("porthole", "0"), "serving MCP")
	if err != nil {
		return nil, mode{}, err
	}
	cached, err := r.startServer(ctx, o.bin, []string{"serve"}, env("cached", "2s"), "serving MCP")
	if err != nil {
		return nil, mode{}, err
	}
	oa, oauthToken, err := r.startOAuthPorthole(ctx, o.bin, dir, env)
	if err != nil {
		return nil, mode{}, err
	}
	rd, rtt, err := r.startRedisPorthole(ctx, o.bin, dir, env)
	if err != nil {
		return nil, mode{}, err
	}
	traced, err := r.startTracedPorthole(ctx, o.bin, dir, env)
	if err != nil {
		return nil, mode{}, err
	}
	// A second porthole exactly like the porthole mode's: the A/A pair,
	// whose difference is what this machine's noise is.
	aa, err := r.startServer(ctx, o.bin, []string{"serve"}, env("porthole-aa", "0"), "serving MCP")
	if err != nil {
		return nil, mode{}, err
	}

	sdkCall := func(ctx context.Context) error {
		_, err := describeWorkflow(ctx, c, srv.Namespace, temporaltest.RunningWorkflowID, "")
		return err
	}
	describe, echo := describeBody(temporaltest.RunningWorkflowID), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
	modes = []mode{
		{"sdk", sdkCall, nil},
		{"hop", httpCall(hc, strings.TrimSuffix(bare.endpoint, "/mcp")+"/hop", describe, ""), bare},
		{"bare", httpCall(hc, bare.endpoint, describe, ""), bare},
		{"porthole", httpCall(hc, ph.endpoint, describe, token), ph},
		// The same porthole asked in protocol 2026-07-28's form (its
		// standard headers, per-request _meta), which porthole answers
		// itself as it answers the older form.
		{"porthole-2026", httpCallWith(hc, ph.endpoint, describeBody2026(temporaltest.RunningWorkflowID), token, http.Header{
			"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"describe_workflow"}}), ph},
		{"cached", httpCall(hc, cached.endpoint, describe, token), cached},
		{"oauth", httpCall(hc, oa.endpoint, describe, oauthToken), oa},
		{"redis", httpCall(hc, rd.endpoint, describe, token), rd},
		{"redis-rtt", rtt, nil},
		{"traced", httpCall(hc, traced.endpoint, describe, token), traced},
		{"porthole-aa", httpCall(hc, aa.endpoint, describe, token), aa},
		{"echo", httpCall(hc, bare.endpoint, echo, ""), bare},
	}
	coalesce = mode{"cached", httpCall(hc, cached.endpoint, describeBody(temporaltest.CompletedWorkflowID), token), cached}
	return modes, coalesce, nil
}

// startOAuthPorthole runs the real authorization server (oidc-provider,
// as the OAuth tests do) and a porthole like the porthole mode's that
// trusts it, and returns that porthole and an access token for it from
// the provider (client credentials, RS256 at+jwt).
func (r *rig) startOAuthPorthole(ctx context.Context, bin, dir string, env func(name, cache string) []string) (*server, string, error) {
	work := filepath.Join(dir, "oidc")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, "", err
	}
	p, stop, err := oidctest.Launch(oidctest.Options{TokenTTL: time.Hour}, work)
	if err != nil {
		return nil, "", err
	}
	r.onClose(stop)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	resource := "http://" + addr + "/mcp"
	token, err := p.ClientCredentialsToken(resource, "porthole:read")
	if err != nil {
		return nil, "", err
	}
	e := append(env("oauth", "0"), "PORTHOLE_ADDR="+addr, "PORTHOLE_PUBLIC_URL="+resource, "PORTHOLE_OAUTH_ISSUER=bench="+p.Issuer())
	s, err := r.startServer(ctx, bin, []string{"serve"}, e, "serving MCP")
	return s, token, err
}

// startRedisPorthole runs a real Redis (redis-server, as the tests do) and
// a porthole like the porthole mode's whose limits are shared there, and
// returns that porthole and a call that is the Redis round trip alone: the
// charge porthole makes per call, made from this process with the same
// client and script.
func (r *rig) startRedisPorthole(ctx context.Context, bin, dir string, env func(name, cache string) []string) (*server, func(context.Context) error, error) {
	work := filepath.Join(dir, "redis")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, nil, err
	}
	rs, err := redistest.Launch(redistest.Options{}, work)
	if err != nil {
		return nil, nil, err
	}
	r.onClose(rs.Stop)
	s, err := r.startServer(ctx, bin, []string{"serve"}, append(env("redis", "0"), "PORTHOLE_REDIS_URL="+rs.URL()), "serving MCP")
	if err != nil {
		return nil, nil, err
	}
	high := limit.Limits{PerPrincipal: 1000000, PerPrincipalBurst: 1000000, Global: 1000000, GlobalBurst: 1000000}
	store, err := redislimit.New(redislimit.Options{URL: rs.URL(), Prefix: "porthole-bench-rtt", Limits: high, FailedAuthBurst: 1, FailedAuthEvery: time.Second, Timeout: time.Second})
	if err != nil {
		return nil, nil, err
	}
	r.onClose(func() { store.Close() })
	rtt := func(ctx context.Context) error {
		ref, err := store.Charge(ctx, "bench", 1, true)
		if err == nil && ref != nil {
			err = fmt.Errorf("the bench's charge was refused: %+v", ref)
		}
		return err
	}
	return s, rtt, nil
}

// startTracedPorthole runs a real Jaeger (as the tracing tests do) and a
// porthole like the porthole mode's that traces every call to it (the
// sampler always on, batches every 100 ms).
func (r *rig) startTracedPorthole(ctx context.Context, bin, dir string, env func(name, cache string) []string) (*server, error) {
	work := filepath.Join(dir, "jaeger")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, err
	}
	j, err := tracetest.Launch(work)
	if err != nil {
		return nil, err
	}
	r.onClose(j.Stop)
	return r.startServer(ctx, bin, []string{"serve"}, append(env("traced", "0"),
		"OTEL_EXPORTER_OTLP_ENDPOINT="+j.OTLPEndpoint, "OTEL_TRACES_SAMPLER=always_on", "OTEL_SERVICE_NAME=porthole-bench"), "serving MCP")
}

// startServer starts a server and has close stop it.
func (r *rig) startServer(ctx context.Context, bin string, args, env []string, ready string) (*server, error) {
	s, err := startServer(ctx, bin, args, env, ready)
	if err != nil {
		return nil, err
	}
	r.onClose(s.stop)
	return s, nil
}

// portholeEnv makes a token and an audit key in dir and returns the token
// and the environment of a porthole named name (its audit log's name) with
// the cache TTL cache: rate limits too high to reach, and nothing from this
// process's own porthole or Temporal settings.
func portholeEnv(dir string, srv *temporaltest.DevServer, pprof bool) (token string, env func(name, cache string) []string, err error) {
	tokensFile := filepath.Join(dir, "tokens")
	if token, err = tokens.Append(tokensFile, "bench"); err != nil {
		return "", nil, err
	}
	key := filepath.Join(dir, "audit.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("k", 64)), 0o600); err != nil {
		return "", nil, err
	}
	env = func(name, cache string) []string {
		return append(ownEnviron(),
			"TEMPORAL_ADDRESS="+srv.FrontendHostPort(), "TEMPORAL_NAMESPACE="+srv.Namespace,
			"PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_ADMIN_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+tokensFile,
			"PORTHOLE_AUDIT_LOG="+filepath.Join(dir, name+".audit.log"), "PORTHOLE_AUDIT_KEY_FILE="+key,
			"PORTHOLE_RATE_PER_PRINCIPAL=1000000", "PORTHOLE_RATE_PER_PRINCIPAL_BURST=1000000",
			"PORTHOLE_RATE_GLOBAL=1000000", "PORTHOLE_RATE_GLOBAL_BURST=1000000", "PORTHOLE_FAILED_AUTH_BURST=1000000",
			"PORTHOLE_CACHE_TTL="+cache, "PORTHOLE_LOG_LEVEL=info", fmt.Sprintf("PORTHOLE_ADMIN_PPROF=%t", pprof))
	}
	return token, env, nil
}

// describeBody is a tools/call of describe_workflow for workflowID.
func describeBody(workflowID string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"` + workflowID + `"}}}`
}

// describeBody2026 is describeBody as a 2026-07-28 client sends it: with
// the per-request _meta that replaces the session.
func describeBody2026(workflowID string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"` + workflowID + `"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"porthole-bench","version":"1"}}}}`
}

// httpCall posts body to url with hc, with token as the bearer when set,
// and fails unless the answer is a result that is not a tool error.
func httpCall(hc *http.Client, url, body, token string) func(context.Context) error {
	return httpCallWith(hc, url, body, token, nil)
}

// httpCallWith is httpCall with more headers.
func httpCallWith(hc *http.Client, url, body, token string, header http.Header) func(context.Context) error {
	return func(ctx context.Context) error {
		status, b, err := post(ctx, hc, url, body, token, header)
		if err != nil {
			return err
		}
		if status != 200 || bytes.Contains(b, []byte(`"isError":true`)) || !bytes.Contains(b, []byte(`"result"`)) {
			return fmt.Errorf("status %d: %.200s", status, b)
		}
		return nil
	}
}

// post posts body to url as an MCP client posts a JSON-RPC request, with
// token as the bearer when set and header's fields, and returns the
// answer's status and body.
func post(ctx context.Context, hc *http.Client, url, body, token string, header http.Header) (int, []byte, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// measureAt runs every mode at concurrency n for the duration, in rounds,
// prints a line for each and returns their results.
func measureAt(ctx context.Context, modes []mode, n int, o options) ([]result, error) {
	acc := make([]measured, len(modes))
	slice := o.duration / time.Duration(o.rounds)
	// Each mode runs for its duration in rounds, the modes taking turns
	// (and a different one first each round), so that a slow spell of the
	// shared machine falls on every mode alike rather than on whichever ran
	// then: the ratios compare modes measured in the same stretches of time.
	for round := range o.rounds {
		for k := range modes {
			i := (round + k) % len(modes)
			profileTo := ""
			if o.profile != "" && n == o.conc[0] && round == 0 {
				switch modes[i].name {
				case "porthole":
					profileTo = o.profile
				case "oauth", "traced", "redis":
					profileTo = strings.TrimSuffix(o.profile, ".prof") + "." + modes[i].name + ".prof"
				}
			}
			if err := acc[i].turn(ctx, modes[i], n, slice, profileTo); err != nil {
				return nil, err
			}
		}
	}
	results := make([]result, 0, len(modes))
	for i, m := range modes {
		r := acc[i].result(m.name, n, o.duration)
		fmt.Printf("%-8s c=%-3d calls=%-6d err=%-4d p50=%-9s p90=%-9s p99=%-9s %.0f/s cpu/call=%s alloc/call=%.0fB rss=%.1fMiB reads=%d\n",
			r.mode, n, r.calls, r.errors, r.p50, r.p90, r.p99, r.throughput, r.cpuPerCall, r.allocPerCall, r.rssMiB, r.temporalRPC)
		results = append(results, r)
	}
	return results, nil
}

// turn runs m from n goroutines for d and adds its latencies and its
// server's costs. With profileTo set, it writes a CPU profile of m's server
// over the turn there.
func (acc *measured) turn(ctx context.Context, m mode, n int, d time.Duration, profileTo string) error {
	var before stats
	if m.srv != nil {
		before = m.srv.stats()
	}
	var profiled chan error
	if profileTo != "" {
		profiled = make(chan error, 1)
		go func() { profiled <- m.srv.profile(profileTo, d) }()
	}
	acc.add(load(ctx, m.call, n, d))
	if profiled != nil {
		if err := <-profiled; err != nil {
			return err
		}
		fmt.Println("== wrote", profileTo)
	}
	if m.srv != nil {
		after := m.srv.stats()
		acc.cpu += after.cpu - before.cpu
		acc.alloc += after.alloc - before.alloc
		acc.reads += int(after.reads - before.reads)
		acc.rssMiB, acc.heapMiB = max(acc.rssMiB, after.rssMiB), max(acc.heapMiB, after.heapMiB)
	}
	return nil
}

// measured is what the rounds of one mode at one concurrency gathered.
type measured struct {
	lat             []time.Duration
	errors          int
	cpu             time.Duration // server process CPU, where measured
	alloc           float64       // server bytes allocated, where measured
	reads           int           // Temporal reads the server made, where counted
	rssMiB, heapMiB float64       // the highest seen after a round
}

func (m *measured) add(lat []time.Duration, errors int) {
	m.lat = append(m.lat, lat...)
	m.errors += errors
}

// result summarises the rounds, which together ran for d.
func (m *measured) result(mode string, n int, d time.Duration) result {
	lat := m.lat
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(float64(len(lat))*p))]
	}
	r := result{mode: mode, concurrency: n, calls: len(lat), errors: m.errors, p50: pct(0.50), p90: pct(0.90), p99: pct(0.99),
		throughput: float64(len(lat)) / d.Seconds(), rssMiB: m.rssMiB, heapMiB: m.heapMiB, temporalRPC: m.reads}
	if len(lat) > 0 {
		r.cpuPerCall = m.cpu / time.Duration(len(lat))
		r.allocPerCall = m.alloc / float64(len(lat))
	}
	return r
}

// load runs call from n goroutines for d and returns each call's latency
// and the number of calls that failed.
func load(ctx context.Context, call func(context.Context) error, n int, d time.Duration) ([]time.Duration, int) {
	var mu sync.Mutex
	var lat []time.Duration
	var errs atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				start := time.Now()
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err := call(cctx)
				cancel()
				if err != nil {
					errs.Add(1)
					continue
				}
				mine = append(mine, time.Since(start))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat, int(errs.Load())
}

// coalescing fires n identical reads at once at a cold cache and reports how
// many Temporal reads they cost.
func coalescing(ctx context.Context, call func(context.Context) error, s *server) string {
	const n = 50
	time.Sleep(2500 * time.Millisecond) // let every kept answer expire
	before := s.stats().reads
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _ = call(ctx) }()
	}
	wg.Wait()
	return fmt.Sprintf("%d identical concurrent describe_workflow calls cost Temporal %d read(s) (porthole_temporal_read_duration_seconds_count).", n, int(s.stats().reads-before))
}

// server is a subprocess serving MCP, with a way to read its costs.
type server struct {
	cmd      *exec.Cmd
	endpoint string
	admin    string // porthole's admin address, or the bare server's stats URL
}

type stats struct {
	cpu             time.Duration
	alloc           float64
	rssMiB, heapMiB float64
	reads           float64
}

func startServer(ctx context.Context, bin string, args, env []string, ready string) (*server, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd}
	lines := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var l map[string]any
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				select {
				case lines <- l:
				default:
				}
			}
		}
	}()
	timeout := time.After(30 * time.Second)
	for s.endpoint == "" || s.admin == "" {
		select {
		case l := <-lines:
			switch l["msg"] {
			case ready:
				s.endpoint = fmt.Sprint(l["endpoint"])
				if a, ok := l["stats"]; ok {
					s.admin = fmt.Sprint(a)
				}
			case "serving admin":
				s.admin = "http://" + fmt.Sprint(l["addr"]) + "/metrics"
			}
		case <-timeout:
			cmd.Process.Kill()
			return nil, fmt.Errorf("%s %v did not start", bin, args)
		}
	}
	return s, nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

// ownEnviron is this process's environment without porthole's and
// Temporal's settings: the servers measured get only what the bench sets.
func ownEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PORTHOLE_") && !strings.HasPrefix(kv, "TEMPORAL_") {
			env = append(env, kv)
		}
	}
	return env
}

// profile writes a CPU profile of the server process over d to path.
func (s *server) profile(path string, d time.Duration) error {
	url := strings.TrimSuffix(s.admin, "/metrics") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(1, int(d.Seconds())))
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profiling %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// stats reads the process's CPU time and RSS from /proc, and its allocations,
// heap and Temporal reads from its metrics.
func (s *server) stats() stats {
	var st stats
	pid := s.cmd.Process.Pid
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		ut, _ := strconv.ParseFloat(f[11], 64)
		stt, _ := strconv.ParseFloat(f[12], 64)
		st.cpu = time.Duration((ut + stt) / 100 * float64(time.Second)) // USER_HZ is 100 on Linux
	}
	st.rssMiB = procStatusKiB(pid, "VmRSS") / 1024
	resp, err := http.Get(s.admin)
	if err != nil {
		return st
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		val := func() float64 {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			return v
		}
		switch {
		case strings.HasPrefix(line, "go_memstats_alloc_bytes_total "):
			st.alloc = val()
		case strings.HasPrefix(line, "go_memstats_heap_inuse_bytes "):
			st.heapMiB = val() / (1 << 20)
		case strings.HasPrefix(line, "porthole_temporal_read_duration_seconds_count"):
			st.reads += val()
		}
	}
	return st
}

// procStatusKiB is the field (VmRSS, VmHWM) of the process pid's
// /proc/pid/status, in KiB, or 0 when it cannot be read.
func procStatusKiB(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == field+":" {
			kib, _ := strconv.ParseFloat(f[1], 64)
			return kib
		}
	}
	return 0
}

// describeWorkflow is the Temporal read of every mode but echo, made as
// porthole's adapter makes it: the workflow service's call. The client's
// DescribeWorkflow would also convert the search attributes, which neither
// porthole nor the bare server does, so the floor would rise.
func describeWorkflow(ctx context.Context, c client.Client, namespace, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return c.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
		Namespace: namespace,
		Execution: &commonpb.WorkflowExecution{WorkflowId: workflowID, RunId: runID},
	})
}

// bareServer is the baseline: a go-sdk stateless streamable HTTP server
// with describe_workflow calling the SDK and returning a small struct, and
// an echo tool; no auth, no audit, no redaction, no limits.
func bareServer(hostPort, namespace string) {
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: namespace, Logger: temporaltest.Quiet()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	type in struct {
		WorkflowID string `json:"workflowId"`
		RunID      string `json:"runId,omitempty"`
	}
	type out struct {
		WorkflowID   string    `json:"workflowId"`
		RunID        string    `json:"runId"`
		WorkflowType string    `json:"workflowType"`
		Status       string    `json:"status"`
		StartTime    time.Time `json:"startTime"`
		Pending      int       `json:"pendingActivities"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "describe_workflow"}, func(ctx context.Context, _ *mcp.CallToolRequest, i in) (*mcp.CallToolResult, out, error) {
		d, err := describeWorkflow(ctx, c, namespace, i.WorkflowID, i.RunID)
		if err != nil {
			return nil, out{}, err
		}
		e := d.GetWorkflowExecutionInfo()
		return nil, out{e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), e.GetType().GetName(), e.GetStatus().String(), e.GetStartTime().AsTime(), len(d.GetPendingActivities())}, nil
	})
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, i echoIn) (*mcp.CallToolResult, echoIn, error) {
		return nil, i, nil
	})
	// blob answers a text of the bytes asked for: the upstream of the
	// answer-size curve (porthole-bench scale).
	type blobIn struct {
		Bytes int `json:"bytes"`
	}
	var blobs sync.Map
	mcp.AddTool(s, &mcp.Tool{Name: "blob", Description: "A text of the given size.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, i blobIn) (*mcp.CallToolResult, any, error) {
			t, ok := blobs.Load(i.Bytes)
			if !ok {
				t, _ = blobs.LoadOrStore(i.Bytes, blobText(i.Bytes))
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: t.(string)}}}, nil, nil
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	// /hop is no MCP at all: a plain handler that makes the same Temporal
	// read and answers a few bytes, the floor for any server that stands
	// between a client and Temporal on this machine.
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Params struct {
				Arguments struct {
					WorkflowID string `json:"workflowId"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if _, err := describeWorkflow(r.Context(), c, namespace, req.Params.Arguments.WorkflowID, ""); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		fmt.Fprintf(w, "go_memstats_alloc_bytes_total %d\ngo_memstats_heap_inuse_bytes %d\n", m.TotalAlloc, m.HeapInuse)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	line, _ := json.Marshal(map[string]string{"msg": "serving bare", "endpoint": "http://" + ln.Addr().String() + "/mcp", "stats": "http://" + ln.Addr().String() + "/stats"})
	fmt.Fprintln(os.Stderr, string(line))
	_ = http.Serve(ln, mux)
}
