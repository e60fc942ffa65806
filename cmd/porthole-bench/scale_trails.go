package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/audit"
)

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
