package main

// scale.go is `porthole-bench scale` (make bench-scale): how porthole's
// cost grows with the work, side by side in one run against one real
// Temporal dev server whose database is seeded once into the cache.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/tokens"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// scaleSeedVersion names the seeded database in the cache; change it when
// what seedScale writes changes.
const scaleSeedVersion = "v1"

// scaleOptions are the flags of `porthole-bench scale`.
type scaleOptions struct {
	smallest bool // the smallest size of each curve only (what .ci/run runs)
	duration time.Duration
	rounds   int
	bin      string
	baseline string // an earlier porthole measured beside bin, where set
	out, svg string
	cache    string
	conc     int // the concurrency of the principals curve
	profile  string
	curves   map[string]bool // the curves to measure
}

// scaleSizes are the sizes each curve is measured at.
type scaleSizes struct {
	histories  []int // events in a workflow's history
	workflows  int   // workflows in the namespace, for the list curve
	listPages  []int
	principals []int
	answerKiB  []int // upstream answers; 0 is the tiny answer the others are measured against
	trailMB    []int
}

func (o scaleOptions) sizes() scaleSizes {
	if o.smallest {
		return scaleSizes{histories: []int{100}, workflows: 200, listPages: []int{10}, principals: []int{1, 100},
			answerKiB: []int{0, 1, 64}, trailMB: []int{10}}
	}
	return scaleSizes{histories: []int{100, 1000, 20000}, workflows: 10000, listPages: []int{10, 100},
		principals: []int{1, 100, 10000, 100000}, answerKiB: []int{0, 1, 4, 16, 64, 256, 1024}, trailMB: []int{10, 100, 1000}}
}

// defaultScaleOut is the report a whole run writes its section into.
const defaultScaleOut = "docs/performance.md"

// scaleCurves are the curves, in the order they are measured.
var scaleCurves = []string{"history", "list", "principals", "answers", "trails"}

// allCurves reports whether every curve is measured.
func (o scaleOptions) allCurves() bool {
	for _, c := range scaleCurves {
		if !o.curves[c] {
			return false
		}
	}
	return true
}

func parseScaleOptions(args []string) (scaleOptions, error) {
	var o scaleOptions
	fs := flag.NewFlagSet("porthole-bench scale", flag.ContinueOnError)
	fs.BoolVar(&o.smallest, "smallest", false, "measure only the smallest size of each curve (a check that none has rotted, as .ci/run runs it)")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "how long each side of each point runs, in rounds")
	fs.IntVar(&o.rounds, "rounds", 4, "how many turns the sides of a point take")
	fs.StringVar(&o.bin, "porthole", "bin/porthole", "the porthole binary")
	fs.StringVar(&o.baseline, "baseline", "", "an earlier porthole binary, measured beside -porthole in the history, answer-size and trail curves (before and after a change)")
	fs.StringVar(&o.out, "out", defaultScaleOut, "the report whose bench-scale section is written (the rest is kept)")
	fs.StringVar(&o.svg, "svg", "docs/performance-scale.svg", "the chart to write")
	def := filepath.Join(os.Getenv("HOME"), ".cache", "porthole")
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		def = filepath.Join(x, "porthole")
	}
	fs.StringVar(&o.cache, "cache", def, "where the seeded dev-server database is kept")
	fs.IntVar(&o.conc, "concurrency", 8, "concurrent clients for the principals curve")
	fs.StringVar(&o.profile, "profile", "", "write a CPU profile of porthole over the first round of each point to this prefix, as PREFIX.<point>.prof")
	curves := fs.String("curves", strings.Join(scaleCurves, ","), "the curves to measure (comma-separated), for a closer look")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.curves = map[string]bool{}
	for _, c := range strings.Split(*curves, ",") {
		c = strings.TrimSpace(c)
		if !slices.Contains(scaleCurves, c) {
			return o, fmt.Errorf("-curves: no curve is named %q (the curves: %s)", c, strings.Join(scaleCurves, ", "))
		}
		o.curves[c] = true
	}
	if o.rounds < 1 || o.duration <= 0 {
		return o, errors.New("-rounds and -duration must be positive")
	}
	return o, nil
}

func runScale(args []string) error {
	o, err := parseScaleOptions(args)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	if (!o.allCurves() || o.smallest) && o.out == defaultScaleOut {
		return fmt.Errorf("-curves naming some curves only, or -smallest: give -out (and -svg) elsewhere than %s, whose section holds every curve at every size", defaultScaleOut)
	}
	sz := o.sizes()
	seeded, err := seededDB(ctx, o, sz)
	if err != nil {
		return err
	}
	var r rig
	defer r.close()
	dir, err := os.MkdirTemp("", "porthole-bench-scale-")
	if err != nil {
		return err
	}
	r.onClose(func() { os.RemoveAll(dir) })
	// The run's own copy: a dev server writes to its database, and runs
	// sharing the cache (two checkouts, CI beside a developer) must not
	// share a file or change the seeded one.
	db := filepath.Join(dir, "temporal.db")
	if err := copyFile(seeded, db); err != nil {
		return err
	}
	fmt.Println("== starting Temporal on a copy of the seeded database", seeded)
	srv, err := temporaltest.Start(ctx, temporaltest.Options{ExtraArgs: append(benchDynamicConfig(), "--db-filename", db)})
	if err != nil {
		return err
	}
	r.onClose(func() { _ = srv.Stop() })
	c, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace, Logger: temporaltest.Quiet()})
	if err != nil {
		return err
	}
	r.onClose(c.Close)

	var rep scaleReport
	rep.opts, rep.sizes = o, sz
	// The commit of the checkout when the run begins, which the binary
	// measured was built from (make bench-scale builds it first).
	if rev, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		rep.commit = strings.TrimSpace(string(rev))
	}
	if o.curves["history"] {
		if rep.history, err = r.historyCurve(ctx, o, sz, srv, c, dir); err != nil {
			return err
		}
	}
	if o.curves["list"] {
		if rep.list, err = r.listCurve(ctx, o, sz, srv, c, dir); err != nil {
			return err
		}
	}
	if o.curves["principals"] {
		if rep.principals, err = r.principalsCurve(ctx, o, sz, srv, dir); err != nil {
			return err
		}
	}
	if o.curves["answers"] {
		if rep.answers, err = r.answerCurve(ctx, o, sz, srv, dir); err != nil {
			return err
		}
	}
	if o.curves["trails"] {
		if rep.trails, err = trailCurve(o, sz, dir); err != nil {
			return err
		}
	}
	rep.askedAgain = pagesAskedAgain.Load()
	return rep.write(o.out, o.svg)
}

// copyFile copies src to dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// benchDynamicConfig raises the dev server's throttles, so that the
// benches measure work and not throttling (make bench's and the scale
// curves' alike).
func benchDynamicConfig() []string {
	return []string{
		"--dynamic-config-value", "frontend.namespaceRPS.visibility=100000",
		"--dynamic-config-value", "frontend.namespaceRPS=100000",
		"--dynamic-config-value", "frontend.rps=100000",
		"--dynamic-config-value", "frontend.namespaceBurstRatio.visibility=10",
	}
}

// Seeded workflow ids.
func historyWorkflowID(events int) string { return fmt.Sprintf("scale-history-%d", events) }
func listWorkflowID(i int) string         { return fmt.Sprintf("scale-list-%05d", i) }

const scaleTaskQueue = "porthole-bench-scale"

// scaleEventsWorkflow completes with a history of exactly events events:
// started, one workflow task (scheduled, started, completed), events-5
// markers recorded in that one task, completed.
func scaleEventsWorkflow(ctx workflow.Context, events int) error {
	for i := 0; i < events-5; i++ {
		_ = workflow.SideEffect(ctx, func(workflow.Context) any { return i })
	}
	return nil
}

func scaleNoopWorkflow(workflow.Context) error { return nil }

// seededDB is the dev-server database holding the workflows the curves
// read, seeded once into the cache (the seeding takes minutes; a run then
// starts at once). A half-seeded database is never kept: it is written
// aside and renamed when complete.
func seededDB(ctx context.Context, o scaleOptions, sz scaleSizes) (string, error) {
	// Named by the Temporal CLI too: another version's server may not read
	// an older one's schema.
	cli, err := temporaltest.CLIPath()
	if err != nil {
		return "", err
	}
	name := "bench-scale-" + scaleSeedVersion + "-" + filepath.Base(filepath.Dir(cli))
	if o.smallest {
		name += "-smallest"
	}
	dir := filepath.Join(o.cache, name)
	db := filepath.Join(dir, "temporal.db")
	if _, err := os.Stat(db); err == nil {
		return db, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	// A file of this process's own: two seedings at once each write their
	// own, and the last renamed is kept, complete either way.
	tmp := fmt.Sprintf("%s.seeding-%d", db, os.Getpid())
	defer os.Remove(tmp)
	start := time.Now()
	fmt.Println("== seeding", db, "(once; it is kept in the cache)")
	srv, err := temporaltest.Start(ctx, temporaltest.Options{ExtraArgs: append(benchDynamicConfig(), "--db-filename", tmp)})
	if err != nil {
		return "", err
	}
	seedCtx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	err = seedScale(seedCtx, srv, sz)
	cancel()
	if serr := srv.Stop(); err == nil {
		err = serr
	}
	if err != nil {
		return "", fmt.Errorf("seeding: %w", err)
	}
	if err := os.Rename(tmp, db); err != nil {
		return "", err
	}
	fmt.Printf("== seeded in %s\n", time.Since(start).Round(time.Second))
	return db, nil
}

func seedScale(ctx context.Context, srv *temporaltest.DevServer, sz scaleSizes) error {
	c, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace, Logger: temporaltest.Quiet()})
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, scaleTaskQueue, worker.Options{MaxConcurrentWorkflowTaskPollers: 8, MaxConcurrentWorkflowTaskExecutionSize: 64})
	w.RegisterWorkflowWithOptions(scaleEventsWorkflow, workflow.RegisterOptions{Name: "ScaleEvents"})
	w.RegisterWorkflowWithOptions(scaleNoopWorkflow, workflow.RegisterOptions{Name: "ScaleNoop"})
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	opts := func(id string) client.StartWorkflowOptions {
		return client.StartWorkflowOptions{ID: id, TaskQueue: scaleTaskQueue}
	}
	var runs []client.WorkflowRun
	for _, n := range sz.histories {
		run, err := c.ExecuteWorkflow(ctx, opts(historyWorkflowID(n)), "ScaleEvents", n)
		if err != nil {
			return err
		}
		runs = append(runs, run)
	}
	// The list workflows, 32 in flight, each worker starting the next when
	// its last completes (starting them without waiting was slower here:
	// 43 s against 26 s for 1,000).
	ids := make(chan int)
	errs := make(chan error, 32)
	failed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				run, err := c.ExecuteWorkflow(ctx, opts(listWorkflowID(i)), "ScaleNoop")
				if err == nil {
					err = run.Get(ctx, nil)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					once.Do(func() { close(failed) })
					return
				}
			}
		}()
	}
send:
	for i := range sz.workflows {
		select {
		case ids <- i:
		case <-failed:
			break send
		case <-ctx.Done():
			break send
		}
		if i%1000 == 999 {
			fmt.Printf("   %d workflows started\n", i+1)
		}
	}
	close(ids)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, run := range runs {
		if err := run.Get(ctx, nil); err != nil {
			return err
		}
	}
	for i, n := range sz.histories {
		d, err := describeWorkflow(ctx, c, srv.Namespace, historyWorkflowID(n), runs[i].GetRunID())
		if err != nil {
			return err
		}
		if got := d.GetWorkflowExecutionInfo().GetHistoryLength(); got != int64(n) {
			return fmt.Errorf("%s has %d events, want %d", historyWorkflowID(n), got, n)
		}
	}
	// Visibility is written apart from the executions: wait until every
	// seeded workflow is listed as closed.
	want := int64(sz.workflows + len(sz.histories))
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: srv.Namespace, Query: "ExecutionStatus = 'Completed'"})
		if err != nil {
			return err
		}
		if n.GetCount() >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("visibility lists %d completed workflows, want %d", n.GetCount(), want)
		}
		time.Sleep(time.Second)
	}
}

// sidePoint is one side of one point of a curve: the units of work done
// (events, workflows, calls) in the time it took, and porthole's CPU where
// porthole was the side.
type sidePoint struct {
	units   int
	elapsed time.Duration
	calls   int
	errors  int
	cpu     time.Duration
	lastErr error
}

func (s sidePoint) perSecond() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.units) / s.elapsed.Seconds()
}

// cpuPer is the side's CPU per n of its units (per 1,000 events, say).
func (s sidePoint) cpuPer(n int) time.Duration {
	return time.Duration(float64(s.cpu) / float64(max(1, s.units)) * float64(n))
}

func (s sidePoint) cpuPerCall() time.Duration {
	if s.calls == 0 {
		return 0
	}
	return s.cpu / time.Duration(s.calls)
}

// side is one way of doing a point's work: op does one unit of it (a walk,
// a page, a call) and says how many units it did.
type side struct {
	op   func(ctx context.Context) (units int, err error)
	srv  *server // porthole, whose CPU is read; nil for the SDK
	n    int     // concurrent clients
	name string  // the point, naming its profile
}

// measureSides runs the sides of one point for o.duration each, in
// o.rounds turns, a different side first each round.
func measureSides(ctx context.Context, o scaleOptions, sides []side) []sidePoint {
	pts := make([]sidePoint, len(sides))
	slice := o.duration / time.Duration(o.rounds)
	// One op of each side first, until it succeeds (an upstream connects
	// after porthole starts serving) or for 30 s: nothing is measured cold.
	for _, s := range sides {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if _, err := s.op(ctx); err == nil || time.Now().After(deadline) {
				break
			}
		}
	}
	for round := range o.rounds {
		for k := range sides {
			i := (round + k) % len(sides)
			s := sides[i]
			var before stats
			if s.srv != nil {
				before = s.srv.stats()
			}
			var profiled chan error
			if o.profile != "" && round == 0 && s.srv != nil && s.name != "" {
				profiled = make(chan error, 1)
				go func() { profiled <- s.srv.profile(o.profile+"."+s.name+".prof", slice) }()
			}
			start := time.Now()
			deadline := start.Add(slice)
			var mu sync.Mutex
			var wg sync.WaitGroup
			for range max(1, s.n) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(deadline) {
						cctx, cancel := context.WithTimeout(ctx, time.Minute)
						u, err := s.op(cctx)
						cancel()
						mu.Lock()
						if err != nil {
							pts[i].errors++
							pts[i].lastErr = err
						} else {
							pts[i].units += u
							pts[i].calls++
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			pts[i].elapsed += time.Since(start)
			if profiled != nil {
				if err := <-profiled; err != nil {
					fmt.Println("== profiling:", err)
				}
			}
			if s.srv != nil {
				pts[i].cpu += s.srv.stats().cpu - before.cpu
			}
		}
	}
	return pts
}

// pagesAskedAgain counts the pages asked a second time by again.
var pagesAskedAgain atomic.Int64

// again asks for a page, and once more if that fails: the dev server's
// SQLite store answers "something went wrong, please retry" now and
// then under this load, and one such page is not worth a walk of forty.
// Both sides of a point ask again alike; the report gives the count.
func again(page func() error) error {
	if err := page(); err == nil {
		return nil
	}
	pagesAskedAgain.Add(1)
	return page()
}

// checkSides fails a point where a side did no work or more than 1% of
// its ops failed (after again), printing any failure.
func checkSides(what string, pts []sidePoint) error {
	for _, p := range pts {
		if p.errors*100 > p.calls+p.errors {
			return fmt.Errorf("%s: %d of %d ops failed, the last: %v", what, p.errors, p.calls+p.errors, p.lastErr)
		}
		if p.units == 0 {
			return fmt.Errorf("%s: no work was done", what)
		}
		if p.errors > 0 {
			fmt.Printf("   %s: %d of %d ops failed, the last: %.300v\n", what, p.errors, p.calls+p.errors, p.lastErr)
		}
	}
	return nil
}

// scalePortholeOf starts a porthole of the binary bin for the scale
// curves: limits too high to reach, the cache at cacheTTL, the tokens file
// tokensFile, and extra settings.
func (r *rig) scalePortholeOf(ctx context.Context, bin string, srv *temporaltest.DevServer, dir, name, cacheTTL, tokensFile string, extra ...string) (*server, error) {
	own := filepath.Join(dir, name)
	if err := os.MkdirAll(own, 0o700); err != nil {
		return nil, err
	}
	_, env, err := portholeEnv(own, srv, true)
	if err != nil {
		return nil, err
	}
	e := append(env(name, cacheTTL), "PORTHOLE_TOKENS_FILE="+tokensFile)
	return r.startServer(ctx, bin, []string{"serve"}, append(e, extra...), "serving MCP")
}

// curvePortholes starts a curve's porthole, name, with its cache off, a
// tokens file of one principal and extra's settings, and the baseline
// binary's porthole beside it (name-before) when withBaseline and
// -baseline are set, else nil; token is the principal's.
func (r *rig) curvePortholes(ctx context.Context, o scaleOptions, srv *temporaltest.DevServer, dir, name string, withBaseline bool, extra ...string) (token string, ph, before *server, err error) {
	tokensFile := filepath.Join(dir, "tokens."+name)
	if token, err = writeTokens(tokensFile, 1); err != nil {
		return "", nil, nil, err
	}
	if ph, err = r.scalePortholeOf(ctx, o.bin, srv, dir, name, "0", tokensFile, extra...); err != nil {
		return "", nil, nil, err
	}
	if withBaseline && o.baseline != "" {
		if before, err = r.scalePortholeOf(ctx, o.baseline, srv, dir, name+"-before", "0", tokensFile, extra...); err != nil {
			return "", nil, nil, err
		}
	}
	return token, ph, before, nil
}

// writeTokens writes a tokens file of n principals and returns the token
// of the last: each line as tokens.Append writes it (a name and the
// token's digest), written at once, since Append reads the file each time.
func writeTokens(path string, n int) (string, error) {
	var b strings.Builder
	var token string
	for i := range n {
		var err error
		if token, err = tokens.New(); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "principal-%06d %s\n", i, tokens.Digest(token))
	}
	return token, os.WriteFile(path, []byte(b.String()), 0o600)
}

// toolCall posts a tools/call of tool with args to s, decodes its
// structured content into out (when out is not nil), and returns the
// answer's size on the wire.
func toolCall(ctx context.Context, hc *http.Client, s *server, token, tool string, args map[string]any, out any) (wireBytes int, err error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	status, b, err := post(ctx, hc, s.endpoint, string(body), token, nil)
	if err != nil {
		return 0, err
	}
	if out == nil {
		out = &struct{}{} // read past, nothing kept
	}
	// One decoding, the structured content into out: the client's cost
	// is part of each porthole side, as the SDK's decoding of its answer
	// is of each SDK side, and should be no more than a client's.
	var answer struct {
		Result *struct {
			IsError           bool `json:"isError"`
			StructuredContent any  `json:"structuredContent"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	answer.Result = &struct {
		IsError           bool `json:"isError"`
		StructuredContent any  `json:"structuredContent"`
	}{StructuredContent: out}
	// Result is set before decoding, so an answer without one would pass
	// as an empty result: the bytes must hold one (as httpCall checks).
	if status != http.StatusOK || json.Unmarshal(b, &answer) != nil || answer.Error != nil || answer.Result.IsError || !bytes.Contains(b, []byte(`"result"`)) {
		return 0, fmt.Errorf("%s: status %d: %.300s", tool, status, b)
	}
	return len(b), nil
}

// historyPoint is the history curve at one size.
type historyPoint struct {
	events        int
	porthole, sdk sidePoint
	before        sidePoint // the baseline porthole, where measured
}

// historyCurve walks each seeded history at the largest page size,
// through porthole (get_workflow_history) and through the SDK's own
// paging (GetWorkflowExecutionHistory), in turns.
func (r *rig) historyCurve(ctx context.Context, o scaleOptions, sz scaleSizes, srv *temporaltest.DevServer, c client.Client, dir string) ([]historyPoint, error) {
	const page = 500 // policy.MaxHistoryPageSize
	token, ph, before, err := r.curvePortholes(ctx, o, srv, dir, "history", true)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{}
	var out []historyPoint
	for _, n := range sz.histories {
		id := historyWorkflowID(n)
		walk := func(ph *server) func(ctx context.Context) (int, error) {
			return func(ctx context.Context) (int, error) {
				events, next := 0, ""
				for {
					var h struct {
						Events        []struct{} `json:"events"`
						NextPageToken string     `json:"nextPageToken"`
					}
					args := map[string]any{"workflowId": id, "pageSize": page}
					if next != "" {
						args["nextPageToken"] = next
					}
					if err := again(func() error {
						_, err := toolCall(ctx, hc, ph, token, "get_workflow_history", args, &h)
						return err
					}); err != nil {
						return 0, err
					}
					events += len(h.Events)
					if next = h.NextPageToken; next == "" {
						break
					}
				}
				if events != n {
					return 0, fmt.Errorf("porthole walked %d events of %s, want %d", events, id, n)
				}
				return events, nil
			}
		}
		viaSDK := func(ctx context.Context) (int, error) {
			events := 0
			var next []byte
			for {
				var resp *workflowservice.GetWorkflowExecutionHistoryResponse
				err := again(func() (err error) {
					resp, err = c.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
						Namespace: srv.Namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id},
						MaximumPageSize: page, NextPageToken: next,
					})
					return err
				})
				if err != nil {
					return 0, err
				}
				events += len(resp.GetHistory().GetEvents())
				if next = resp.GetNextPageToken(); len(next) == 0 {
					break
				}
			}
			if events != n {
				return 0, fmt.Errorf("the SDK walked %d events of %s, want %d", events, id, n)
			}
			return events, nil
		}
		sides := []side{{op: walk(ph), srv: ph, n: 1, name: fmt.Sprintf("history-%d", n)}, {op: viaSDK, n: 1}}
		if before != nil {
			sides = append(sides, side{op: walk(before), srv: before, n: 1})
		}
		pts := measureSides(ctx, o, sides)
		if err := checkSides("history of "+id, pts); err != nil {
			return nil, err
		}
		p := historyPoint{events: n, porthole: pts[0], sdk: pts[1]}
		if before != nil {
			p.before = pts[2]
			fmt.Printf("history %6d events: the baseline %8.0f events/s, CPU %s per 1,000 events\n", n, p.before.perSecond(), p.before.cpuPer(1000))
		}
		fmt.Printf("history %6d events: porthole %8.0f events/s, sdk %8.0f events/s (%.2f×), porthole CPU %s per 1,000 events\n",
			n, p.porthole.perSecond(), p.sdk.perSecond(), p.porthole.perSecond()/p.sdk.perSecond(), p.porthole.cpuPer(1000))
		out = append(out, p)
	}
	return out, nil
}

// listPoint is the list curve at one page size.
type listPoint struct {
	page          int
	porthole, sdk sidePoint
}

// listCurve pages through the namespace's workflows at each page size,
// through porthole (list_workflows) and the SDK (ListWorkflowExecutions),
// each side going on from where it left off and starting again at the end.
func (r *rig) listCurve(ctx context.Context, o scaleOptions, sz scaleSizes, srv *temporaltest.DevServer, c client.Client, dir string) ([]listPoint, error) {
	token, ph, _, err := r.curvePortholes(ctx, o, srv, dir, "list", false)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{}
	var pts []listPoint
	for _, page := range sz.listPages {
		var phNext string
		viaPorthole := func(ctx context.Context) (int, error) {
			var l struct {
				Workflows     []struct{} `json:"workflows"`
				NextPageToken string     `json:"nextPageToken"`
			}
			args := map[string]any{"pageSize": page}
			if phNext != "" {
				args["nextPageToken"] = phNext
			}
			if err := again(func() error {
				_, err := toolCall(ctx, hc, ph, token, "list_workflows", args, &l)
				return err
			}); err != nil {
				return 0, err
			}
			phNext = l.NextPageToken
			return len(l.Workflows), nil
		}
		var sdkNext []byte
		viaSDK := func(ctx context.Context) (int, error) {
			var resp *workflowservice.ListWorkflowExecutionsResponse
			err := again(func() (err error) {
				resp, err = c.WorkflowService().ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{
					Namespace: srv.Namespace, PageSize: int32(page), NextPageToken: sdkNext,
				})
				return err
			})
			if err != nil {
				return 0, err
			}
			sdkNext = resp.GetNextPageToken()
			return len(resp.GetExecutions()), nil
		}
		sides := measureSides(ctx, o, []side{{op: viaPorthole, srv: ph, n: 1, name: fmt.Sprintf("list-%d", page)}, {op: viaSDK, n: 1}})
		if err := checkSides(fmt.Sprintf("list at page size %d", page), sides); err != nil {
			return nil, err
		}
		p := listPoint{page: page, porthole: sides[0], sdk: sides[1]}
		fmt.Printf("list page %3d: porthole %7.0f workflows/s, sdk %7.0f workflows/s (%.2f×)\n",
			page, p.porthole.perSecond(), p.sdk.perSecond(), p.porthole.perSecond()/p.sdk.perSecond())
		pts = append(pts, p)
	}
	return pts, nil
}

// principalsPoint is the principals curve at one tokens-file size.
type principalsPoint struct {
	principals int
	aa         bool // a second porthole with one principal: the A/A pair
	calls      sidePoint
}

// principalsCurve runs one porthole per tokens-file size, each answering
// the same describe_workflow from its cache, the last principal's token
// calling, in turns.
func (r *rig) principalsCurve(ctx context.Context, o scaleOptions, sz scaleSizes, srv *temporaltest.DevServer, dir string) ([]principalsPoint, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var sides []side
	// A second porthole with one principal, the A/A pair: what two
	// portholes alike differ by here.
	sizes := append([]int{sz.principals[0]}, sz.principals...)
	for i, n := range sizes {
		tokensFile := filepath.Join(dir, fmt.Sprintf("tokens.%d.%d", n, i))
		token, err := writeTokens(tokensFile, n)
		if err != nil {
			return nil, err
		}
		ph, err := r.scalePortholeOf(ctx, o.bin, srv, dir, fmt.Sprintf("principals-%d-%d", n, i), "1h", tokensFile)
		if err != nil {
			return nil, err
		}
		call := httpCall(hc, ph.endpoint, describeBody(listWorkflowID(0)), token)
		sides = append(sides, side{op: func(ctx context.Context) (int, error) { return 1, call(ctx) }, srv: ph, n: o.conc, name: fmt.Sprintf("principals-%d", n)})
	}
	// Each side first in as many rounds as any other.
	fair := o
	fair.rounds = len(sides) * ((o.rounds + len(sides) - 1) / len(sides))
	pts := measureSides(ctx, fair, sides)
	if err := checkSides("principals", pts); err != nil {
		return nil, err
	}
	var out []principalsPoint
	for i, n := range sizes {
		out = append(out, principalsPoint{principals: n, aa: i == 1, calls: pts[i]})
		fmt.Printf("principals %6d: %6.0f calls/s (%.2f× one), CPU %s per call\n", n, pts[i].perSecond(), pts[i].perSecond()/pts[0].perSecond(), pts[i].cpuPerCall())
	}
	return out, nil
}

// answerPoint is the answer-size curve at one size.
type answerPoint struct {
	kib    int
	calls  sidePoint
	before sidePoint // the baseline porthole, where measured
	served int       // bytes of the answer porthole served, on the wire
}

// answerCurve has porthole serve upstream answers of each size (the bench's
// bare server, an upstream on the roster with the largest cap) and
// measures porthole's CPU per call at each.
func (r *rig) answerCurve(ctx context.Context, o scaleOptions, sz scaleSizes, srv *temporaltest.DevServer, dir string) ([]answerPoint, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	bare, err := r.startServer(ctx, self, []string{"bare-server", srv.FrontendHostPort(), srv.Namespace}, nil, "serving bare")
	if err != nil {
		return nil, err
	}
	roster := filepath.Join(dir, "roster.yaml")
	if err := os.WriteFile(roster, []byte(fmt.Sprintf("upstreams:\n  - name: bench\n    url: %s\n    maxResultBytes: %d\n    tools:\n      - name: blob\n", bare.endpoint, 1<<20)), 0o600); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, o.bin, "roster", "pin", "--roster-file", roster).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("porthole roster pin: %v: %s", err, out)
	}
	token, ph, before, err := r.curvePortholes(ctx, o, srv, dir, "answers", true, "PORTHOLE_ROSTER_FILE="+roster)
	if err != nil {
		return nil, err
	}
	phs := []*server{ph}
	if before != nil {
		phs = append(phs, before)
	}
	hc := &http.Client{}
	served := make([][]int, len(phs))
	var sides []side
	for k, ph := range phs {
		served[k] = make([]int, len(sz.answerKiB))
		for i, kib := range sz.answerKiB {
			bytes := max(16, kib<<10)
			name := fmt.Sprintf("answer-%d", kib)
			if k > 0 {
				name = ""
			}
			sides = append(sides, side{op: func(ctx context.Context) (int, error) {
				n, err := toolCall(ctx, hc, ph, token, "bench__blob", map[string]any{"bytes": bytes}, nil)
				if err != nil {
					return 0, err
				}
				served[k][i] = n
				return 1, nil
			}, srv: ph, n: 1, name: name})
		}
	}
	pts := measureSides(ctx, o, sides)
	if err := checkSides("answers", pts); err != nil {
		return nil, err
	}
	var out []answerPoint
	for i, kib := range sz.answerKiB {
		p := answerPoint{kib: kib, calls: pts[i], served: served[0][i]}
		if len(phs) > 1 {
			p.before = pts[len(sz.answerKiB)+i]
		}
		out = append(out, p)
		if kib > 0 {
			fmt.Printf("answer %5d KiB: porthole CPU %s per call, %.1f µs per KiB added\n", kib, p.calls.cpuPerCall(), addedPerKiB(out[0].calls, p.calls, kib))
			if len(phs) > 1 {
				fmt.Printf("answer %5d KiB: the baseline's CPU %s per call, %.1f µs per KiB added\n", kib, p.before.cpuPerCall(), addedPerKiB(out[0].before, p.before, kib))
			}
		}
	}
	return out, nil
}

// addedPerKiB is porthole's CPU per KiB of answer that p adds over the
// tiny answer base.
func addedPerKiB(base, p sidePoint, kib int) float64 {
	return float64(p.cpuPerCall()-base.cpuPerCall()) / float64(time.Microsecond) / addedKiB(kib)
}

// addedKiB is the KiB an answer of kib KiB holds over the 16-byte base.
func addedKiB(kib int) float64 { return float64(kib<<10-16) / 1024 }

// blobText is n bytes of text like an upstream's answer: log lines with
// names, numbers and times, none of them secrets.
func blobText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "2026-12-01T10:%02d:%02d.%03dZ worker-%d activity ChargeCard attempt %d of order-%06d completed in %d ms on task queue orders\n",
			i/60%60, i%60, i%1000, i%7, i%3+1, i, 20+i%90)
	}
	return b.String()[:n]
}

// trailPoint is the audit curve at one trail size.
type trailPoint struct {
	mb             int
	bytes          int64
	verify, report timing
	// The baseline's, where measured.
	verifyBefore, reportBefore timing
}

type timing struct {
	took    time.Duration
	peakMiB float64
}

func (r timing) mbPerSecond(bytes int64) float64 { return float64(bytes) / 1e6 / r.took.Seconds() }

// trailCurve writes an audit trail of each size with porthole's own writer
// (one unrotated file, about 1 KB a record) and times porthole audit verify
// and report over it, reading their peak memory from the kernel.
func trailCurve(o scaleOptions, sz scaleSizes, dir string) ([]trailPoint, error) {
	key := filepath.Join(dir, "trail.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("k", 64)), 0o600); err != nil {
		return nil, err
	}
	var pts []trailPoint
	for _, mb := range sz.trailMB {
		path := filepath.Join(dir, fmt.Sprintf("trail-%d.log", mb))
		n, err := writeTrail(path, []byte(strings.Repeat("k", 64)), int64(mb)*1e6)
		if err != nil {
			return nil, err
		}
		p := trailPoint{mb: mb, bytes: n}
		if p.verify, err = timed(o.bin, "audit", "verify", "--key-file", key, path); err != nil {
			return nil, err
		}
		if p.report, err = timed(o.bin, "audit", "report", "--key-file", key, path); err != nil {
			return nil, err
		}
		if o.baseline != "" {
			if p.verifyBefore, err = timed(o.baseline, "audit", "verify", "--key-file", key, path); err != nil {
				return nil, err
			}
			if p.reportBefore, err = timed(o.baseline, "audit", "report", "--key-file", key, path); err != nil {
				return nil, err
			}
			fmt.Printf("trail %5d MB: the baseline's verify %s (%.0f MB/s, peak %.0f MiB), report %s (%.0f MB/s, peak %.0f MiB)\n", mb,
				p.verifyBefore.took.Round(time.Millisecond), p.verifyBefore.mbPerSecond(n), p.verifyBefore.peakMiB,
				p.reportBefore.took.Round(time.Millisecond), p.reportBefore.mbPerSecond(n), p.reportBefore.peakMiB)
		}
		os.Remove(path)
		fmt.Printf("trail %5d MB: verify %s (%.0f MB/s, peak %.0f MiB), report %s (%.0f MB/s, peak %.0f MiB)\n", mb,
			p.verify.took.Round(time.Millisecond), p.verify.mbPerSecond(n), p.verify.peakMiB,
			p.report.took.Round(time.Millisecond), p.report.mbPerSecond(n), p.report.peakMiB)
		pts = append(pts, p)
	}
	return pts, nil
}

// timed runs porthole with args and returns its wall time and peak RSS.
// The peak is the process's VmHWM, read from /proc while it runs: the
// kernel's rusage of a child counts the RSS of this process too (the
// child shares its memory until it execs).
func timed(bin string, args ...string) (timing, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = ownEnviron()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return timing{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peakKiB float64
	for {
		peakKiB = max(peakKiB, procStatusKiB(cmd.Process.Pid, "VmHWM"))
		select {
		case err := <-done:
			took := time.Since(start)
			if err != nil {
				return timing{}, fmt.Errorf("porthole %s: %v: %.500s", strings.Join(args, " "), err, out.String())
			}
			return timing{took: took, peakMiB: peakKiB / 1024}, nil
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// writeTrail writes an audit log of about size bytes with porthole's
// writer: calls and their results from 50 principals over the read tools,
// with the arguments agents send, and a denial every 50 calls.
func writeTrail(path string, key []byte, size int64) (int64, error) {
	l, err := audit.Open(audit.Config{Path: path, Key: key})
	if err != nil {
		return 0, err
	}
	tools := []string{"describe_workflow", "get_workflow_history", "list_workflows", "describe_task_queue", "count_workflows"}
	ctx := context.Background()
	var written int64
	for i := 0; written < size; i++ {
		principal := fmt.Sprintf("agent-%02d@example.com", i%50)
		tool := tools[i%len(tools)]
		id := fmt.Sprintf("req-%08d", i)
		args := []audit.Arg{{Name: "workflowId", Value: fmt.Sprintf("order-%06d", i%5000)}, {Name: "query", Value: "WorkflowType = 'OrderWorkflow' AND ExecutionStatus = 'Running' AND StartTime > '2026-11-01T00:00:00Z'"}, {Name: "pageSize", Value: "100"}}
		call := audit.Record{Kind: audit.KindCall, RequestID: id, Principal: principal, ClientAddr: fmt.Sprintf("10.0.%d.%d:51234", i%4, i%200), Transport: "http",
			UserAgent: "claude-code/2.1 (agent; linux)", Method: "tools/call", Tool: tool, Args: args, TraceID: fmt.Sprintf("%032x", i+1)}
		res := audit.Record{Kind: audit.KindResult, RequestID: id, Principal: principal, Tool: tool, Outcome: audit.OutcomeOK,
			Duration: time.Duration(1+i%40) * time.Millisecond, ResultBytes: 2000 + i%9000, TraceID: call.TraceID}
		for _, rec := range []audit.Record{call, res} {
			if err := l.Write(ctx, rec); err != nil {
				l.Close()
				return 0, err
			}
		}
		if i%50 == 49 {
			if err := l.Write(ctx, audit.Record{Kind: audit.KindDenial, RequestID: id + "-d", Principal: principal, ClientAddr: call.ClientAddr, Transport: "http",
				Outcome: audit.OutcomeRateLimited, Status: http.StatusTooManyRequests, Reason: "rate limited"}); err != nil {
				l.Close()
				return 0, err
			}
		}
		// Every 100 calls (about 100 KB): the trail passes its size by
		// less than its table rounds away, so its table and its chart
		// name the same size.
		if i%100 == 99 {
			st, err := os.Stat(path)
			if err != nil {
				l.Close()
				return 0, err
			}
			written = st.Size()
		}
	}
	if err := l.Close(); err != nil {
		return 0, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
