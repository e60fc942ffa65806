package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/porthole-dev/porthole/gateway/tokens"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

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
