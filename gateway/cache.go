package gateway

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/singleflight"

	"github.com/porthole-dev/porthole/temporal/read"
)

// maxCacheEntries bounds the cache; past it, expired entries are swept and,
// if that is not enough, new answers are not kept.
const maxCacheEntries = 1024

// cachingReader answers identical reads within ttl from one Temporal call.
// Concurrent identical reads share one call in flight (singleflight), and
// an answer is kept for ttl, served with its age. A chatty client therefore
// cannot spend the namespace's read quota: a hundred identical reads in a
// second cost Temporal one. Errors are shared in flight but never kept.
//
// Answers are the same for every principal (one install is one trust
// domain), so the cache is shared. A shared read runs detached from the
// first caller's cancellation, bounded by the call timeout, so that one
// caller hanging up does not fail the others.
type cachingReader struct {
	read.Reader
	ttl     time.Duration
	timeout time.Duration
	now     func() time.Time
	m       *metrics
	tracer  trace.Tracer // nil when tracing is off

	mu      sync.Mutex
	entries map[string]*cacheEntry
	flight  singleflight.Group
}

type cacheEntry struct {
	v  any
	at time.Time
	// rendered is the answer as the tool handler first sent it from this
	// entry, redacted and without its age, so that later hits need not
	// marshal and redact the same value again (see Server.render).
	rendered atomic.Pointer[renderedAnswer]
}

func newCachingReader(r read.Reader, ttl, timeout time.Duration, m *metrics, tracer trace.Tracer) *cachingReader {
	return &cachingReader{Reader: r, ttl: ttl, timeout: timeout, now: time.Now, m: m, tracer: tracer, entries: map[string]*cacheEntry{}}
}

// result is any result type: all embed read.Observation.
type result[T any] interface {
	*T
	Observed() *read.Observation
}

// cachedHit is a kept answer for key still within its time, as a copy
// with its age set.
func cachedHit[T any, P result[T]](c *cachingReader, ctx context.Context, key string) (P, bool) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if !ok || now.Sub(e.at) >= c.ttl {
		return nil, false
	}
	c.m.cached("hit")
	st := resultNotesFrom(ctx)
	st.cached, st.entry = true, e
	cp := *e.v.(P)
	age := now.Sub(e.at).Seconds()
	P(&cp).Observed().AgeSeconds = &age
	return &cp, true
}

// sharedRead is the read a call makes for every caller that asks for key
// while it runs: within the cache's timeout, whichever caller goes away,
// and kept.
func sharedRead[T any, P result[T]](c *cachingReader, ctx context.Context, key string, call func(context.Context) (P, error)) (any, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	read, err := call(rctx)
	if err != nil {
		return nil, err
	}
	return kept{read, c.keep(key, read)}, nil
}

// countRead counts a read as shared with another call's, or a miss.
func (c *cachingReader) countRead(ctx context.Context, shared bool) {
	if shared {
		c.m.cached("shared")
		resultNotesFrom(ctx).cached = true
		return
	}
	c.m.cached("miss")
}

// cachedRead is the one path of every cached method. A kept answer is served
// as a copy with its age set.
// The key holds the caller's disclosure profile (all but the default's):
// an entry keeps the first rendering of its answer (see render), which is
// that profile's, so an answer rendered for one profile is never served to
// another.
func cachedRead[T any, P result[T]](c *cachingReader, ctx context.Context, key string, call func(context.Context) (P, error)) (P, error) {
	if profile := disclosureOf(ctx).Key(); profile != "" {
		key = profile + "\x00" + key
	}
	var traced link
	if c.tracer != nil {
		// The cache's event: a hit ends it at once; a miss after the
		// Temporal RPC (whose span is the operation's child), a shared
		// read after another call's.
		traced = startLink(ctx, "porthole cache")
		defer traced.End()
	}
	if hit, ok := cachedHit[T, P](c, ctx, key); ok {
		traced.EndWithString("porthole.cache.result", "hit")
		return hit, nil
	}
	ch := c.flight.DoChan(key, func() (v any, err error) {
		// The shared read runs on a goroutine of singleflight's, which
		// re-panics where nothing can recover: a panic here goes to each
		// caller instead, whose call ends as an internal error.
		defer func() {
			if p := recover(); p != nil {
				v, err = nil, readPanic{p}
			}
		}()
		return sharedRead(c, ctx, key, call)
	})
	// A caller that goes away stops waiting; the read goes on for the
	// others sharing it, within its own timeout.
	var res singleflight.Result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	v, err := res.Val, res.Err
	c.countRead(ctx, res.Shared)
	if res.Shared {
		traced.EndWithString("porthole.cache.result", "shared")
	} else {
		traced.EndWithString("porthole.cache.result", "miss")
	}
	if p, ok := err.(readPanic); ok {
		panic(p.v)
	}
	if err != nil {
		return nil, err
	}
	// The entry goes with the answer, so that its first rendering is kept
	// for the hits after it (see render).
	k := v.(kept)
	resultNotesFrom(ctx).entry = k.entry
	return k.v.(P), nil
}

// kept is a shared read's answer and the cache entry it was kept in (nil
// when the cache was full).
type kept struct {
	v     any
	entry *cacheEntry
}

// readPanic carries a panic of a shared read to its callers.
type readPanic struct{ v any }

func (p readPanic) Error() string { return fmt.Sprintf("a read panicked: %v", p.v) }

func (c *cachingReader) keep(key string, v any) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.entries) >= maxCacheEntries {
		for k, e := range c.entries {
			if now.Sub(e.at) >= c.ttl {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCacheEntries {
			return nil
		}
	}
	e := &cacheEntry{v: v, at: now}
	c.entries[key] = e
	return e
}

func key(method string, req any) string { return fmt.Sprintf("%s\x00%#v", method, req) }

func (c *cachingReader) ListWorkflows(ctx context.Context, req read.ListWorkflowsRequest) (*read.WorkflowList, error) {
	return cachedRead(c, ctx, key("ListWorkflows", req), func(ctx context.Context) (*read.WorkflowList, error) { return c.Reader.ListWorkflows(ctx, req) })
}

func (c *cachingReader) CountWorkflows(ctx context.Context, req read.CountWorkflowsRequest) (*read.WorkflowCount, error) {
	return cachedRead(c, ctx, key("CountWorkflows", req), func(ctx context.Context) (*read.WorkflowCount, error) { return c.Reader.CountWorkflows(ctx, req) })
}

func (c *cachingReader) DescribeWorkflow(ctx context.Context, req read.WorkflowRef) (*read.WorkflowDescription, error) {
	return cachedRead(c, ctx, key("DescribeWorkflow", req), func(ctx context.Context) (*read.WorkflowDescription, error) {
		return c.Reader.DescribeWorkflow(ctx, req)
	})
}

func (c *cachingReader) GetWorkflowHistory(ctx context.Context, req read.HistoryRequest) (*read.History, error) {
	return cachedRead(c, ctx, key("GetWorkflowHistory", req), func(ctx context.Context) (*read.History, error) { return c.Reader.GetWorkflowHistory(ctx, req) })
}

func (c *cachingReader) DescribeTaskQueue(ctx context.Context, req read.TaskQueueRequest) (*read.TaskQueueDescription, error) {
	return cachedRead(c, ctx, key("DescribeTaskQueue", req), func(ctx context.Context) (*read.TaskQueueDescription, error) {
		return c.Reader.DescribeTaskQueue(ctx, req)
	})
}

func (c *cachingReader) ListSchedules(ctx context.Context, req read.ListSchedulesRequest) (*read.ScheduleList, error) {
	return cachedRead(c, ctx, key("ListSchedules", req), func(ctx context.Context) (*read.ScheduleList, error) { return c.Reader.ListSchedules(ctx, req) })
}

func (c *cachingReader) DescribeSchedule(ctx context.Context, req read.ScheduleRef) (*read.ScheduleDescription, error) {
	return cachedRead(c, ctx, key("DescribeSchedule", req), func(ctx context.Context) (*read.ScheduleDescription, error) {
		return c.Reader.DescribeSchedule(ctx, req)
	})
}

func (c *cachingReader) DescribeNamespace(ctx context.Context) (*read.NamespaceDescription, error) {
	return cachedRead(c, ctx, "DescribeNamespace", func(ctx context.Context) (*read.NamespaceDescription, error) { return c.Reader.DescribeNamespace(ctx) })
}

func (c *cachingReader) ListSearchAttributes(ctx context.Context) (*read.SearchAttributeList, error) {
	return cachedRead(c, ctx, "ListSearchAttributes", func(ctx context.Context) (*read.SearchAttributeList, error) {
		return c.Reader.ListSearchAttributes(ctx)
	})
}

func (c *cachingReader) ListBatchOperations(ctx context.Context, req read.ListBatchOperationsRequest) (*read.BatchOperationList, error) {
	return cachedRead(c, ctx, key("ListBatchOperations", req), func(ctx context.Context) (*read.BatchOperationList, error) {
		return c.Reader.ListBatchOperations(ctx, req)
	})
}

func (c *cachingReader) DescribeBatchOperation(ctx context.Context, req read.BatchOperationRef) (*read.BatchOperationDescription, error) {
	return cachedRead(c, ctx, key("DescribeBatchOperation", req), func(ctx context.Context) (*read.BatchOperationDescription, error) {
		return c.Reader.DescribeBatchOperation(ctx, req)
	})
}

func (c *cachingReader) ListWorkerDeployments(ctx context.Context, req read.ListWorkerDeploymentsRequest) (*read.WorkerDeploymentList, error) {
	return cachedRead(c, ctx, key("ListWorkerDeployments", req), func(ctx context.Context) (*read.WorkerDeploymentList, error) {
		return c.Reader.ListWorkerDeployments(ctx, req)
	})
}

func (c *cachingReader) DescribeWorkerDeployment(ctx context.Context, req read.WorkerDeploymentRef) (*read.WorkerDeploymentDescription, error) {
	return cachedRead(c, ctx, key("DescribeWorkerDeployment", req), func(ctx context.Context) (*read.WorkerDeploymentDescription, error) {
		return c.Reader.DescribeWorkerDeployment(ctx, req)
	})
}
