package main

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/audit"
)

// trailPoint is the audit curve at one trail size.
type trailPoint struct {
	mb             int
	bytes          int64 // the plain trail's size
	verify, report timing
	// treeBytes is the size of the trail kept as a Merkle tree, and
	// verifyTree verify with the public key over it.
	treeBytes  int64
	verifyTree timing
	// The baseline's, where measured.
	verifyBefore, reportBefore timing
	// turns is how many times each verify ran.
	turns int
}

type timing struct {
	took    time.Duration
	peakMiB float64
}

func (r timing) mbPerSecond(bytes int64) float64 { return float64(bytes) / 1e6 / r.took.Seconds() }

// trailOrigin is the origin of the trail curve's trees.
const trailOrigin = "bench.porthole.example/audit/trail"

// trailKeys are the keys the trails are written under, and the files a
// verifier is given them in.
type trailKeys struct {
	hmac                 []byte
	signer               ed25519.PrivateKey
	hmacFile, publicFile string
}

// newTrailKeys makes an HMAC key and a signing key pair, and writes the
// HMAC key and the public key to files in dir.
func newTrailKeys(dir string) (trailKeys, error) {
	k := trailKeys{hmac: []byte(strings.Repeat("k", 64)), hmacFile: filepath.Join(dir, "trail.key"), publicFile: filepath.Join(dir, "trail-signing.pub")}
	priv, pub, err := audit.GenerateSigningKey()
	if err != nil {
		return k, err
	}
	if k.signer, err = audit.ParseSigningKey(priv); err != nil {
		return k, err
	}
	if err := os.WriteFile(k.hmacFile, k.hmac, 0o600); err != nil {
		return k, err
	}
	return k, os.WriteFile(k.publicFile, pub, 0o644)
}

// trailCurve writes two audit trails of each size with porthole's own
// writer (one unrotated file each, about 1 KB a record): a plain one, and
// one kept as a Merkle tree with signed checkpoints at the default
// cadence. It times porthole audit verify over the plain trail with the
// HMAC key, and over the tree trail with the public key too (which
// recomputes each checkpoint's tree from the records), in turns, and
// porthole audit report over the plain trail, reading their peak memory
// from the kernel.
func trailCurve(o scaleOptions, sz scaleSizes, dir string) ([]trailPoint, error) {
	k, err := newTrailKeys(dir)
	if err != nil {
		return nil, err
	}
	var pts []trailPoint
	for _, mb := range sz.trailMB {
		p, err := trailAt(o, k, dir, mb)
		if err != nil {
			return nil, err
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// trailAt is the trail curve's point of mb MB. Its trails, and the tree
// trail's tree file, are removed when it is measured.
func trailAt(o scaleOptions, k trailKeys, dir string, mb int) (trailPoint, error) {
	plain, tree := filepath.Join(dir, fmt.Sprintf("trail-%d.log", mb)), filepath.Join(dir, fmt.Sprintf("trail-%d-tree.log", mb))
	defer func() {
		for _, f := range []string{plain, tree, tree + audit.TreeSuffix, tree + ".checkpoints"} {
			os.Remove(f)
		}
	}()
	p := trailPoint{mb: mb}
	var err error
	if p.bytes, err = writeTrail(audit.Config{Path: plain, Key: k.hmac}, int64(mb)*1e6); err != nil {
		return p, err
	}
	if p.treeBytes, err = writeTrail(audit.Config{Path: tree, Key: k.hmac, Signer: k.signer, Origin: trailOrigin, CheckpointPath: tree + ".checkpoints"}, int64(mb)*1e6); err != nil {
		return p, err
	}
	if err := p.verifyInTurns(o, k, plain, tree); err != nil {
		return p, err
	}
	if p.report, err = timed(io.Discard, o.bin, "audit", "report", "--key-file", k.hmacFile, plain); err != nil {
		return p, err
	}
	if o.baseline != "" {
		if p.reportBefore, err = timed(io.Discard, o.baseline, "audit", "report", "--key-file", k.hmacFile, plain); err != nil {
			return p, err
		}
	}
	p.print(o.baseline != "")
	return p, nil
}

// treeRecomputed is what verify says when it recomputed a tree trail's
// signed notes from its records: the tree trail's verify must say it, or
// the tree was not what it timed.
const treeRecomputed = "recomputed from the records"

// verifyInTurns times verify over the plain trail, verify with the public
// key over the tree trail, and the baseline's verify over the plain trail
// where set, taking turns (a different one first each turn), so that a
// slow spell of the shared machine falls on each alike: at least o.rounds
// turns, and more until each has verified for o.duration in all, so that
// a small trail's ratio rests on more than one short run. Each timing's
// took is its mean over the turns, its peak the highest.
func (p *trailPoint) verifyInTurns(o scaleOptions, k trailKeys, plain, tree string) error {
	type side struct {
		t     *timing
		bin   string
		args  []string
		want  string // what its output must hold
		total time.Duration
	}
	sides := []*side{
		{t: &p.verify, bin: o.bin, args: []string{"audit", "verify", "--key-file", k.hmacFile, plain}},
		{t: &p.verifyTree, bin: o.bin, args: []string{"audit", "verify", "--key-file", k.hmacFile, "--public-key", k.publicFile, tree}, want: treeRecomputed},
	}
	if o.baseline != "" {
		sides = append(sides, &side{t: &p.verifyBefore, bin: o.baseline, args: []string{"audit", "verify", "--key-file", k.hmacFile, plain}})
	}
	least := func() time.Duration {
		return slices.MinFunc(sides, func(a, b *side) int { return cmp.Compare(a.total, b.total) }).total
	}
	for p.turns = 0; p.turns < o.rounds || least() < o.duration; p.turns++ {
		for i := range sides {
			s := sides[(p.turns+i)%len(sides)]
			var out strings.Builder
			t, err := timed(&out, s.bin, s.args...)
			if err != nil {
				return err
			}
			if !strings.Contains(out.String(), s.want) {
				return fmt.Errorf("porthole %s did not say %q: %.500s", strings.Join(s.args, " "), s.want, out.String())
			}
			s.total += t.took
			s.t.peakMiB = max(s.t.peakMiB, t.peakMiB)
		}
	}
	for _, s := range sides {
		s.t.took = s.total / time.Duration(p.turns)
	}
	return nil
}

// print writes the point's line to the run's output.
func (p trailPoint) print(baseline bool) {
	if baseline {
		fmt.Printf("trail %5d MB: the baseline's verify %s (%.0f MB/s, peak %.0f MiB), report %s (%.0f MB/s, peak %.0f MiB)\n", p.mb,
			p.verifyBefore.took.Round(time.Millisecond), p.verifyBefore.mbPerSecond(p.bytes), p.verifyBefore.peakMiB,
			p.reportBefore.took.Round(time.Millisecond), p.reportBefore.mbPerSecond(p.bytes), p.reportBefore.peakMiB)
	}
	fmt.Printf("trail %5d MB: verify %s (%.0f MB/s, peak %.0f MiB), as a tree %s (%.0f MB/s, peak %.0f MiB, %s plain's MB/s), %d turns; report %s (%.0f MB/s, peak %.0f MiB)\n", p.mb,
		p.verify.took.Round(time.Millisecond), p.verify.mbPerSecond(p.bytes), p.verify.peakMiB,
		p.verifyTree.took.Round(time.Millisecond), p.verifyTree.mbPerSecond(p.treeBytes), p.verifyTree.peakMiB, p.treeRatio(), p.turns,
		p.report.took.Round(time.Millisecond), p.report.mbPerSecond(p.bytes), p.report.peakMiB)
}

// treeRatio is verify's throughput over the tree trail against its
// throughput over the plain trail, each in MB/s of its own trail.
func (p trailPoint) treeRatio() string {
	return ratio(p.verifyTree.mbPerSecond(p.treeBytes), p.verify.mbPerSecond(p.bytes))
}

// timed runs porthole with args, its output to stdout, and returns its
// wall time and peak RSS.
// The peak is the process's VmHWM, read from /proc while it runs: the
// kernel's rusage of a child counts the RSS of this process too (the
// child shares its memory until it execs).
func timed(stdout io.Writer, bin string, args ...string) (timing, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = ownEnviron()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = stdout, &out
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

// writeTrail writes an audit log of about size bytes at cfg.Path with
// porthole's writer, configured by cfg: calls and their results from 50
// principals over the read tools, with the arguments agents send, and a
// denial every 50 calls.
func writeTrail(cfg audit.Config, size int64) (int64, error) {
	path := cfg.Path
	l, err := audit.Open(cfg)
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
