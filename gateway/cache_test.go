package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
)

func TestTheCacheCoalescesIdenticalReads(t *testing.T) {
	t.Parallel()
	r := &countingReader{fakeReader: &fakeReader{}, release: make(chan struct{})}
	g, a := newTestServer(t, r)
	cs := connect(t, g)
	const n = 20
	var wg sync.WaitGroup
	results := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), callParams("describe_namespace"))
			if err == nil && !res.IsError {
				results[i] = "ok"
			}
		}(i)
	}
	waitFor(t, func() bool { return r.calls.Load() == 1 })
	time.Sleep(50 * time.Millisecond) // let the others join the flight
	close(r.release)
	wg.Wait()
	if got := r.calls.Load(); got != 1 {
		t.Fatalf("%d identical concurrent reads cost Temporal %d calls, want 1", n, got)
	}
	res, err := cs.CallTool(context.Background(), callParams("describe_namespace"))
	if err != nil || !strings.Contains(textOf(res), `"ageSeconds"`) {
		t.Fatalf("a cached answer does not say its age: %v %s", err, textOf(res))
	}
	if got := r.calls.Load(); got != 1 {
		t.Fatalf("the answer was not kept: %d calls", got)
	}
	cached := 0
	for _, rec := range a.all() {
		if rec.Kind == audit.KindResult && rec.Cached {
			cached++
		}
	}
	if cached < n {
		t.Fatalf("%d result records say cached, want at least %d", cached, n)
	}
}
