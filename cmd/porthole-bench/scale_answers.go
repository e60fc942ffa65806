package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// answerPoint is the answer-size curve at one size.
type answerPoint struct {
	kib      int
	calls    sidePoint
	before   sidePoint // the baseline porthole, where measured
	personal sidePoint // porthole with every personal-data detector on
	served   int       // bytes of the answer porthole served, on the wire
}

// personalKinds switches every personal-data detector on, for the curve's
// third side.
const personalKinds = "PORTHOLE_REDACT_PERSONAL=email,phone,iban,card"

// answerCurve has porthole serve upstream answers of each size (the bench's
// bare server, an upstream on the roster with the largest cap) and
// measures porthole's CPU per call at each.
func (r *rig) answerCurve(ctx context.Context, o scaleOptions, sz scaleSizes, srv *temporaltest.DevServer, dir string) ([]answerPoint, error) {
	roster, err := r.blobRoster(ctx, o, srv, dir)
	if err != nil {
		return nil, err
	}
	token, ph, before, err := r.curvePortholes(ctx, o, srv, dir, "answers", true, "PORTHOLE_ROSTER_FILE="+roster)
	if err != nil {
		return nil, err
	}
	personal, err := r.scalePortholeOf(ctx, o.bin, srv, dir, "answers-personal", "0", filepath.Join(dir, "tokens.answers"), "PORTHOLE_ROSTER_FILE="+roster, personalKinds)
	if err != nil {
		return nil, err
	}
	phs := []*server{ph, personal}
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
	return answerPoints(sz, pts, served, before != nil), nil
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

// blobRoster starts a bare server as the upstream whose blob tool answers
// texts of the sizes asked for, and writes and pins a roster naming it.
func (r *rig) blobRoster(ctx context.Context, o scaleOptions, srv *temporaltest.DevServer, dir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	bare, err := r.startServer(ctx, self, []string{"bare-server", srv.FrontendHostPort(), srv.Namespace}, nil, "serving bare")
	if err != nil {
		return "", err
	}
	roster := filepath.Join(dir, "roster.yaml")
	if err := os.WriteFile(roster, []byte(fmt.Sprintf("upstreams:\n  - name: bench\n    url: %s\n    maxResultBytes: %d\n    tools:\n      - name: blob\n", bare.endpoint, 1<<20)), 0o600); err != nil {
		return "", err
	}
	if out, err := exec.CommandContext(ctx, o.bin, "roster", "pin", "--roster-file", roster).CombinedOutput(); err != nil {
		return "", fmt.Errorf("porthole roster pin: %v: %s", err, out)
	}
	return roster, nil
}

// answerPoints are the curve's points from the sides measured: porthole's
// at each size, then porthole's with the personal-data detectors on,
// then, withBefore, the baseline's.
func answerPoints(sz scaleSizes, pts []sidePoint, served [][]int, withBefore bool) []answerPoint {
	var out []answerPoint
	n := len(sz.answerKiB)
	for i, kib := range sz.answerKiB {
		p := answerPoint{kib: kib, calls: pts[i], personal: pts[n+i], served: served[0][i]}
		if withBefore {
			p.before = pts[2*n+i]
		}
		out = append(out, p)
		if kib > 0 {
			fmt.Printf("answer %5d KiB: porthole CPU %s per call, %.1f µs per KiB added\n", kib, p.calls.cpuPerCall(), addedPerKiB(out[0].calls, p.calls, kib))
			fmt.Printf("answer %5d KiB: with personal-data detectors, CPU %s per call, %.1f µs per KiB added\n", kib, p.personal.cpuPerCall(), addedPerKiB(out[0].personal, p.personal, kib))
			if withBefore {
				fmt.Printf("answer %5d KiB: the baseline's CPU %s per call, %.1f µs per KiB added\n", kib, p.before.cpuPerCall(), addedPerKiB(out[0].before, p.before, kib))
			}
		}
	}
	return out
}
