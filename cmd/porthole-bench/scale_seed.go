package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

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

func listWorkflowID(i int) string { return fmt.Sprintf("scale-list-%05d", i) }

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
	var runs []client.WorkflowRun
	for _, n := range sz.histories {
		run, err := c.ExecuteWorkflow(ctx, seedOptions(historyWorkflowID(n)), "ScaleEvents", n)
		if err != nil {
			return err
		}
		runs = append(runs, run)
	}
	if err := seedListWorkflows(ctx, c, sz.workflows); err != nil {
		return err
	}
	if err := checkHistories(ctx, c, srv.Namespace, sz, runs); err != nil {
		return err
	}
	return waitListed(ctx, c, srv.Namespace, int64(sz.workflows+len(sz.histories)))
}

// seedOptions start a seeded workflow of id on the bench's task queue.
func seedOptions(id string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{ID: id, TaskQueue: scaleTaskQueue}
}

// seedListWorkflows runs n no-op workflows for the list curve, 32 in
// flight, each worker starting the next when its last completes (starting
// them without waiting was slower here: 43 s against 26 s for 1,000).
func seedListWorkflows(ctx context.Context, c client.Client, n int) error {
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
				run, err := c.ExecuteWorkflow(ctx, seedOptions(listWorkflowID(i)), "ScaleNoop")
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
	for i := range n {
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
	return ctx.Err()
}

// checkHistories waits for the history workflows and holds each to the
// number of events it was seeded with.
func checkHistories(ctx context.Context, c client.Client, namespace string, sz scaleSizes, runs []client.WorkflowRun) error {
	for _, run := range runs {
		if err := run.Get(ctx, nil); err != nil {
			return err
		}
	}
	for i, n := range sz.histories {
		d, err := describeWorkflow(ctx, c, namespace, historyWorkflowID(n), runs[i].GetRunID())
		if err != nil {
			return err
		}
		if got := d.GetWorkflowExecutionInfo().GetHistoryLength(); got != int64(n) {
			return fmt.Errorf("%s has %d events, want %d", historyWorkflowID(n), got, n)
		}
	}
	return nil
}

// waitListed waits until visibility lists want workflows as completed:
// it is written apart from the executions.
func waitListed(ctx context.Context, c client.Client, namespace string, want int64) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: "ExecutionStatus = 'Completed'"})
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
