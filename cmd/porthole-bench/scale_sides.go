package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

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
			sideTurn(ctx, s, slice, &pts[i])
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

// sideTurn runs side s's clients for one slice, counting into pt.
func sideTurn(ctx context.Context, s side, slice time.Duration, pt *sidePoint) {
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
					pt.errors++
					pt.lastErr = err
				} else {
					pt.units += u
					pt.calls++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	pt.elapsed += time.Since(start)
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
