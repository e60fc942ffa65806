package main

// scale.go is `porthole-bench scale` (make bench-scale): how porthole's
// cost grows with the work, side by side in one run against one real
// Temporal dev server whose database is seeded once into the cache.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

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
	gitleaks string // the gitleaks binary the answer-size curve runs beside porthole's redactor
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
	fs.StringVar(&o.gitleaks, "gitleaks", "bin/porthole-bench-gitleaks", "the gitleaks binary (cmd/porthole-bench/gitleaks) the answer-size curve runs beside porthole's redactor")
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
	if o.curves["answers"] {
		if err := checkGitleaks(o); err != nil {
			return err
		}
	}
	sz := o.sizes()
	var r rig
	defer r.close()
	srv, c, dir, err := r.startSeeded(ctx, o, sz)
	if err != nil {
		return err
	}
	rep := scaleReport{opts: o, sizes: sz}
	// The commit of the checkout when the run begins, which the binary
	// measured was built from (make bench-scale builds it first).
	if rev, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		rep.commit = strings.TrimSpace(string(rev))
	}
	if err := r.runCurves(ctx, o, sz, srv, c, dir, &rep); err != nil {
		return err
	}
	rep.askedAgain = pagesAskedAgain.Load()
	return rep.write(o.out, o.svg)
}

// startSeeded starts a dev server on the run's own copy of the seeded
// database (a dev server writes to its database, and runs sharing the
// cache, two checkouts or CI beside a developer, must not share a file or
// change the seeded one), and an SDK client of it.
func (r *rig) startSeeded(ctx context.Context, o scaleOptions, sz scaleSizes) (*temporaltest.DevServer, client.Client, string, error) {
	seeded, err := seededDB(ctx, o, sz)
	if err != nil {
		return nil, nil, "", err
	}
	dir, err := os.MkdirTemp("", "porthole-bench-scale-")
	if err != nil {
		return nil, nil, "", err
	}
	r.onClose(func() { os.RemoveAll(dir) })
	db := filepath.Join(dir, "temporal.db")
	if err := copyFile(seeded, db); err != nil {
		return nil, nil, "", err
	}
	fmt.Println("== starting Temporal on a copy of the seeded database", seeded)
	srv, err := temporaltest.Start(ctx, temporaltest.Options{ExtraArgs: append(benchDynamicConfig(), "--db-filename", db)})
	if err != nil {
		return nil, nil, "", err
	}
	r.onClose(func() { _ = srv.Stop() })
	c, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace, Logger: temporaltest.Quiet()})
	if err != nil {
		return nil, nil, "", err
	}
	r.onClose(c.Close)
	return srv, c, dir, nil
}

// runCurves measures the curves asked for, in scaleCurves' order, into rep.
func (r *rig) runCurves(ctx context.Context, o scaleOptions, sz scaleSizes, srv *temporaltest.DevServer, c client.Client, dir string, rep *scaleReport) error {
	var err error
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
		// The outside anchor, once the curve's points are measured.
		if rep.anchor, err = redactionAnchor(o, dir); err != nil {
			return err
		}
	}
	if o.curves["trails"] {
		if rep.trails, err = trailCurve(o, sz, dir); err != nil {
			return err
		}
	}
	return nil
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
