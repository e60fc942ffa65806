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
	"cmp"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

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
	if err := o.checkModes(); err != nil {
		return err
	}
	modes, coalesce, err := r.start(ctx, o)
	if err != nil {
		return err
	}
	var results []result
	for _, n := range o.conc {
		at, err := measureAt(ctx, modes, n, o)
		if err != nil {
			return err
		}
		results = append(results, at...)
	}
	coalesced := "not measured: the cached mode was not run"
	if coalesce.srv != nil {
		coalesced = coalescing(ctx, coalesce.call, coalesce.srv)
	}
	if err := writeReport(o.out, o.svg, results, o.conc, coalesced, o.duration, o.rounds, o.samplerName()); err != nil {
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
	aaBin         string // the porthole-aa mode's binary; empty for bin
	// sampler and samplerArg are the traced mode's OTEL_TRACES_SAMPLER
	// and OTEL_TRACES_SAMPLER_ARG.
	sampler, samplerArg string
}

// samplerName is the traced mode's sampler as the report names it.
func (o options) samplerName() string {
	if o.samplerArg != "" {
		return o.sampler + " " + o.samplerArg
	}
	return o.sampler
}

// modeNames are the bench's modes, in the order they run; modeServer
// names the server each calls ("" for none started by the bench), so that
// -modes starts only what its modes need (no Jaeger without traced, no
// oidc-provider without oauth, no Redis without redis).
var modeNames = []string{"sdk", "hop", "bare", "porthole", "porthole-2026", "cached", "oauth", "redis", "redis-rtt", "traced", "profiled", "pseudonymised", "signed", "merkle", "porthole-aa", "echo"}

var modeServer = map[string]string{
	"hop": "bare", "bare": "bare", "echo": "bare",
	"porthole": "porthole", "porthole-2026": "porthole",
	"cached": "cached", "oauth": "oauth", "redis": "redis", "redis-rtt": "redis",
	"traced": "traced", "profiled": "profiled", "pseudonymised": "pseudonymised", "signed": "signed", "merkle": "merkle", "porthole-aa": "porthole-aa",
}

// runs says whether mode is among those asked for (every one by default).
func (o options) runs(mode string) bool {
	if o.only == "" {
		return true
	}
	for _, m := range strings.Split(o.only, ",") {
		if strings.TrimSpace(m) == mode {
			return true
		}
	}
	return false
}

// needs says whether a mode asked for calls the server named server.
func (o options) needs(server string) bool {
	for _, m := range modeNames {
		if modeServer[m] == server && o.runs(m) {
			return true
		}
	}
	return false
}

// checkModes refuses a -modes naming a mode the bench does not have.
func (o options) checkModes() error {
	if o.only == "" {
		return nil
	}
	for _, m := range strings.Split(o.only, ",") {
		if !slices.Contains(modeNames, strings.TrimSpace(m)) {
			return fmt.Errorf("-modes: no mode %q (the modes: %s)", strings.TrimSpace(m), strings.Join(modeNames, ", "))
		}
	}
	return nil
}

func parseOptions() (options, error) {
	var o options
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "how long each mode runs at each concurrency")
	flag.StringVar(&o.profile, "profile", "", "write a CPU profile of the porthole process, taken while it serves the lowest concurrency's first round, to this file (and of the oauth, redis, traced, profiled, pseudonymised, signed and merkle modes beside it, as .oauth.prof and so on)")
	flag.StringVar(&o.only, "modes", "", "run only these modes (comma-separated), for a closer look; the report holds only them")
	flag.IntVar(&o.rounds, "rounds", 5, "how many turns the modes take at each concurrency, sharing the duration")
	levels := flag.String("concurrency", "1,8,32,64", "comma-separated concurrency levels")
	flag.StringVar(&o.bin, "porthole", "bin/porthole", "the porthole binary")
	flag.StringVar(&o.aaBin, "porthole-aa", "", "the binary of the porthole-aa mode, to compare another build with this one side by side; the same binary by default (the A/A pair)")
	flag.StringVar(&o.out, "out", "docs/performance.md", "the report to write")
	flag.StringVar(&o.svg, "svg", "docs/performance.svg", "the chart to write")
	flag.StringVar(&o.sampler, "sampler", "always_on", "the traced mode's sampler (OTEL_TRACES_SAMPLER): always_on, parentbased_traceidratio, always_off, ...")
	flag.StringVar(&o.samplerArg, "sampler-arg", "", "the traced mode's OTEL_TRACES_SAMPLER_ARG (a ratio for the traceidratio samplers)")
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
	c, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace, Logger: temporaltest.Quiet()})
	if err != nil {
		return nil, mode{}, err
	}
	r.onClose(c.Close)
	sv, err := r.startServers(ctx, o, srv, dir)
	if err != nil {
		return nil, mode{}, err
	}
	modes = slices.DeleteFunc(sv.modes(c, srv), func(m mode) bool { return !o.runs(m.name) })
	return modes, sv.coalesce(), nil
}

// servers are the servers the modes call, and the tokens they take.
type servers struct {
	bare, porthole, cached, oauth, redis, traced, profiled, pseudonymised, signed, merkle, aa *server
	// pseudonym is the running workflow's id as the pseudonymised mode's
	// caller knows it.
	token, oauthToken, pseudonym string
	redisRTT                     func(context.Context) error
	hc                           *http.Client
}

// startServers starts the servers the modes asked for call: the bare
// server, and each porthole with what it needs (oidc-provider, Redis,
// Jaeger) only when its mode runs.
func (r *rig) startServers(ctx context.Context, o options, srv *temporaltest.DevServer, dir string) (*servers, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	sv := &servers{hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}}
	if o.needs("bare") {
		if sv.bare, err = r.startServer(ctx, self, []string{"bare-server", srv.FrontendHostPort(), srv.Namespace}, nil, "serving bare"); err != nil {
			return nil, err
		}
	}
	token, env, err := portholeEnv(dir, srv, o.profile != "")
	if err != nil {
		return nil, err
	}
	sv.token = token
	// A second porthole exactly like the porthole mode's: the A/A pair,
	// whose difference is what this machine's noise is. Given another
	// binary (-porthole-aa), it is that build's porthole beside this one.
	aaBin := cmp.Or(o.aaBin, o.bin)
	for _, p := range []struct {
		name string
		srv  **server
		bin  string
		ttl  string
	}{{"porthole", &sv.porthole, o.bin, "0"}, {"cached", &sv.cached, o.bin, "2s"}, {"porthole-aa", &sv.aa, aaBin, "0"}} {
		if o.needs(p.name) {
			if *p.srv, err = r.startServer(ctx, p.bin, []string{"serve"}, env(p.name, p.ttl), "serving MCP"); err != nil {
				return nil, err
			}
		}
	}
	return sv, r.startOtherPortholes(ctx, o, sv, dir, srv.Namespace, env)
}

// startOtherPortholes starts the portholes the modes asked for that need
// more than a porthole: an authorization server, Redis, Jaeger, a policy
// file, a signing key.
func (r *rig) startOtherPortholes(ctx context.Context, o options, sv *servers, dir, namespace string, env func(name, cache string) []string) (err error) {
	if o.needs("oauth") {
		if sv.oauth, sv.oauthToken, err = r.startOAuthPorthole(ctx, o.bin, dir, env); err != nil {
			return err
		}
	}
	if o.needs("redis") {
		if sv.redis, sv.redisRTT, err = r.startRedisPorthole(ctx, o.bin, dir, env); err != nil {
			return err
		}
	}
	if o.needs("traced") {
		if sv.traced, err = r.startTracedPorthole(ctx, o.bin, dir, env, o.sampler, o.samplerArg); err != nil {
			return err
		}
	}
	if o.needs("profiled") {
		if sv.profiled, err = r.startProfiledPorthole(ctx, o.bin, dir, env); err != nil {
			return err
		}
	}
	if o.needs("pseudonymised") {
		if sv.pseudonymised, sv.pseudonym, err = r.startPseudonymisedPorthole(ctx, o.bin, dir, namespace, env); err != nil {
			return err
		}
	}
	for _, p := range []struct {
		name, origin string
		srv          **server
	}{{"signed", "", &sv.signed}, {"merkle", merkleOrigin, &sv.merkle}} {
		if o.needs(p.name) {
			if *p.srv, err = r.startSigningPorthole(ctx, o.bin, dir, p.name, p.origin, env); err != nil {
				return err
			}
		}
	}
	return nil
}

// modes are the ways of making the read, each against its server; a mode
// whose server was not started is left out.
func (sv *servers) modes(c client.Client, srv *temporaltest.DevServer) []mode {
	sdkCall := func(ctx context.Context) error {
		_, err := describeWorkflow(ctx, c, srv.Namespace, temporaltest.RunningWorkflowID, "")
		return err
	}
	describe, echo := describeBody(temporaltest.RunningWorkflowID), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`
	hc, token := sv.hc, sv.token
	modes := []mode{{"sdk", sdkCall, nil}}
	add := func(name string, s *server, call func(endpoint string) func(context.Context) error) {
		if s != nil {
			modes = append(modes, mode{name, call(s.endpoint), s})
		}
	}
	with := func(body, token string) func(string) func(context.Context) error {
		return func(endpoint string) func(context.Context) error { return httpCall(hc, endpoint, body, token) }
	}
	add("hop", sv.bare, func(endpoint string) func(context.Context) error {
		return httpCall(hc, strings.TrimSuffix(endpoint, "/mcp")+"/hop", describe, "")
	})
	add("bare", sv.bare, with(describe, ""))
	add("porthole", sv.porthole, with(describe, token))
	// The same porthole asked in protocol 2026-07-28's form (its standard
	// headers, per-request _meta), which porthole answers itself as it
	// answers the older form.
	add("porthole-2026", sv.porthole, func(endpoint string) func(context.Context) error {
		return httpCallWith(hc, endpoint, describeBody2026(temporaltest.RunningWorkflowID), token, http.Header{
			"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"describe_workflow"}})
	})
	add("cached", sv.cached, with(describe, token))
	add("oauth", sv.oauth, with(describe, sv.oauthToken))
	add("redis", sv.redis, with(describe, token))
	if sv.redis != nil {
		modes = append(modes, mode{"redis-rtt", sv.redisRTT, nil})
	}
	add("traced", sv.traced, with(describe, token))
	add("profiled", sv.profiled, with(describe, token))
	add("pseudonymised", sv.pseudonymised, with(describeBody(sv.pseudonym), token))
	add("signed", sv.signed, with(describe, token))
	add("merkle", sv.merkle, with(describe, token))
	add("porthole-aa", sv.aa, with(describe, token))
	add("echo", sv.bare, with(echo, ""))
	return modes
}

// coalesce is the cached mode reading the completed workflow, for the
// coalescing check; none when the cached mode does not run.
func (sv *servers) coalesce() mode {
	if sv.cached == nil {
		return mode{}
	}
	return mode{"cached", httpCall(sv.hc, sv.cached.endpoint, describeBody(temporaltest.CompletedWorkflowID), sv.token), sv.cached}
}
