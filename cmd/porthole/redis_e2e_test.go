package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/gateway/limit/redislimit/redistest"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// replica is one porthole of a set sharing one Redis.
type replica struct {
	endpoint, admin, auditLog string
	p                         *process
}

// startReplicas runs n portholes against the shared dev server and one
// Redis, with one tokens file, each its own audit log, and extra settings.
func startReplicas(t *testing.T, n int, redisURL, tokensFile string, extra ...string) []replica {
	t.Helper()
	var rs []replica
	for range n {
		env, auditLog, _ := auditEnv(t)
		env = append(env, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+tokensFile, "PORTHOLE_REDIS_URL="+redisURL)
		p, line := startPorthole(t, temporalEnv(t, append(env, extra...)...), "serving MCP", "serve")
		rs = append(rs, replica{endpoint: line["endpoint"].(string), admin: adminOf(t, p), auditLog: auditLog, p: p})
	}
	return rs
}

// spread makes calls of describe_namespace with token, round robin over
// the replicas from four clients, and returns how many each status got
// and how long it took.
func spread(rs []replica, token string, calls int) (map[int]int, time.Duration) {
	var mu sync.Mutex
	got := map[int]int{}
	next := make(chan int, calls)
	for i := range calls {
		next <- i
	}
	close(next)
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range next {
				a := callRaw(rs[i%len(rs)].endpoint, token, "describe_namespace", nil)
				mu.Lock()
				got[a.status]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return got, time.Since(start)
}

// TestAPrincipalsLimitHoldsAcrossThreeReplicas: 100 calls spread over
// three replicas against a limit of 20 + 5/s admit at most 20 + 5/s of the
// time taken (each replica alone would admit 20 + 5/s: three times that).
func TestAPrincipalsLimitHoldsAcrossThreeReplicas(t *testing.T) {
	t.Parallel()
	redis := redistest.Start(t, redistest.Options{})
	file, token := newToken(t, "agent")
	rs := startReplicas(t, 3, redis.URL(), file, "PORTHOLE_RATE_PER_PRINCIPAL=5", "PORTHOLE_RATE_PER_PRINCIPAL_BURST=20")
	got, took := spread(rs, token, 100)
	allowed := 20 + int(5*took.Seconds()) + 1
	if got[http.StatusOK] < 20 || got[http.StatusOK] > allowed || got[http.StatusOK]+got[http.StatusTooManyRequests] != 100 {
		t.Fatalf("100 calls over three replicas in %v: %v; want 20 to %d answered (20 + 5/s), the rest 429", took, got, allowed)
	}
	t.Logf("100 calls in %v: %d answered (limit %d), %d refused", took, got[http.StatusOK], allowed, got[http.StatusTooManyRequests])
}

// TestTheGlobalLimitHoldsAcrossThreeReplicas: two principals, each far
// under its own limit, together meet the global limit of 10 + 5/s.
func TestTheGlobalLimitHoldsAcrossThreeReplicas(t *testing.T) {
	t.Parallel()
	redis := redistest.Start(t, redistest.Options{})
	file, alice := newToken(t, "alice")
	bob := appendToken(t, file, "bob")
	rs := startReplicas(t, 3, redis.URL(), file, "PORTHOLE_RATE_GLOBAL=5", "PORTHOLE_RATE_GLOBAL_BURST=10")
	var a, b map[int]int
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { a, _ = spread(rs, alice, 30) })
	wg.Go(func() { b, _ = spread(rs, bob, 30) })
	wg.Wait()
	took := time.Since(start)
	ok := a[http.StatusOK] + b[http.StatusOK]
	if allowed := 10 + int(5*took.Seconds()) + 1; ok < 10 || ok > allowed {
		t.Fatalf("60 calls of two principals over three replicas in %v: alice %v, bob %v; want 10 to %d answered in all", took, a, b, allowed)
	}
}

// TestFailedAuthenticationsAreSharedAcrossReplicas: with a burst of 3,
// the fourth failure from an address is refused whichever replica it
// reaches (alone, each replica would allow three: nine in all).
func TestFailedAuthenticationsAreSharedAcrossReplicas(t *testing.T) {
	t.Parallel()
	redis := redistest.Start(t, redistest.Options{})
	file, token := newToken(t, "agent")
	rs := startReplicas(t, 3, redis.URL(), file, "PORTHOLE_FAILED_AUTH_BURST=3")
	for i := range 3 {
		if a := callRaw(rs[i].endpoint, fmt.Sprintf("ph_guess%d", i), "describe_namespace", nil); a.status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i, a.status)
		}
	}
	for i := range 3 {
		if a := callRaw(rs[i].endpoint, "ph_guess-more", "describe_namespace", nil); a.status != http.StatusTooManyRequests {
			t.Fatalf("replica %d after three failures on three replicas: %d, want 429", i, a.status)
		}
	}
	// The agent's valid token from the same address is still answered.
	if a := callRaw(rs[1].endpoint, token, "describe_namespace", nil); a.status != http.StatusOK {
		t.Fatalf("the agent after a stranger's failures: %+v", a)
	}
}

// TestRedisDownRefusesAndRecovers (PORTHOLE_REDIS_FAILURE=closed, the
// default): Redis stopped mid-load gives 503s with a sentence, audited as
// unavailable, and /readyz says why; Redis restarted, the limits are
// shared again with nothing restarted.
func TestRedisDownRefusesAndRecovers(t *testing.T) {
	t.Parallel()
	redis := redistest.Start(t, redistest.Options{})
	file, token := newToken(t, "agent")
	rs := startReplicas(t, 3, redis.URL(), file, "PORTHOLE_RATE_PER_PRINCIPAL=0.001", "PORTHOLE_RATE_PER_PRINCIPAL_BURST=6")
	if got, _ := spread(rs, token, 3); got[http.StatusOK] != 3 {
		t.Fatalf("before the outage: %v", got)
	}
	redis.Stop()
	got, _ := spread(rs, token, 60)
	if got[http.StatusServiceUnavailable] != 60 {
		t.Fatalf("60 calls with Redis stopped: %v; want every one refused with 503", got)
	}
	a := callRaw(rs[0].endpoint, token, "describe_namespace", nil)
	if a.status != http.StatusServiceUnavailable || !strings.Contains(a.rpcError, "Redis does not answer") {
		t.Fatalf("a call with Redis down: %+v", a)
	}
	// A guess at a token gets no unlimited window either.
	if a := callRaw(rs[0].endpoint, "ph_guess", "describe_namespace", nil); a.status != http.StatusServiceUnavailable {
		t.Fatalf("a bad token with Redis down: %d, want 503", a.status)
	}
	status, body := getText(t, rs[0].admin+"/readyz")
	if status != http.StatusOK || !strings.Contains(body, "redis: does not answer") || !strings.Contains(body, "refused with 503") {
		t.Fatalf("/readyz with Redis down: %d %q", status, body)
	}
	if _, metrics := getText(t, rs[0].admin+"/metrics"); !strings.Contains(metrics, "porthole_redis_up 0") {
		t.Fatal("porthole_redis_up is not 0 with Redis down")
	}
	if err := redis.Restart(); err != nil {
		t.Fatal(err)
	}
	// Each replica finds Redis again on its own time (its breaker closes
	// at its next probe): every one is waited for, one answered call each.
	for i, r := range rs {
		if !temporaltest.Poll(10*time.Second, func() bool {
			return callRaw(r.endpoint, token, "describe_namespace", nil).status == http.StatusOK
		}) {
			t.Fatalf("replica %d did not answer within 10 s of Redis coming back", i)
		}
	}
	// The restarted Redis is empty: the bucket is full again, and shared:
	// at most 6 across the three, 3 of them taken by the calls above.
	got, _ = spread(rs, token, 30)
	if got[http.StatusOK] > 6 || got[http.StatusTooManyRequests] < 24 {
		t.Fatalf("after the restart: %v; want at most the burst of 6 answered across three replicas", got)
	}
	for _, r := range rs {
		r.p.stop(t)
	}
	unavailable := 0
	for _, r := range rs {
		b, err := os.ReadFile(r.auditLog)
		if err != nil {
			t.Fatal(err)
		}
		unavailable += strings.Count(string(b), `"outcome":"unavailable"`)
	}
	if unavailable == 0 {
		t.Fatal("no denial record says unavailable")
	}
}

// TestRedisDownLimitsLocallyAtAShare (PORTHOLE_REDIS_FAILURE=local):
// with Redis down each of three replicas limits alone at a third of each
// limit, so together they allow what one shared limit allows, and count
// each fallback.
func TestRedisDownLimitsLocallyAtAShare(t *testing.T) {
	t.Parallel()
	redis := redistest.Start(t, redistest.Options{})
	file, token := newToken(t, "agent")
	rs := startReplicas(t, 3, redis.URL(), file, "PORTHOLE_RATE_PER_PRINCIPAL=0.001", "PORTHOLE_RATE_PER_PRINCIPAL_BURST=21",
		"PORTHOLE_REDIS_FAILURE=local", "PORTHOLE_REPLICAS=3")
	redis.Stop()
	got, _ := spread(rs, token, 60)
	if got[http.StatusOK] != 21 || got[http.StatusTooManyRequests] != 39 {
		t.Fatalf("60 calls over three replicas limiting alone: %v; want 21 answered (7 each, a third of 21), 39 refused", got)
	}
	_, body := getText(t, rs[0].admin+"/readyz")
	if !strings.Contains(body, "limiting locally") {
		t.Fatalf("/readyz: %q", body)
	}
	if _, metrics := getText(t, rs[0].admin+"/metrics"); !strings.Contains(metrics, `porthole_redis_fallbacks_total{op="charge"}`) {
		t.Fatal("fallbacks are not counted")
	}
}

// TestLocalFailureNeedsTheReplicaCount: PORTHOLE_REDIS_FAILURE=local
// without PORTHOLE_REPLICAS is refused at start.
func TestLocalFailureNeedsTheReplicaCount(t *testing.T) {
	t.Parallel()
	out, err := execPorthole(t, baseEnv("PORTHOLE_REDIS_URL=redis://127.0.0.1:1", "PORTHOLE_REDIS_FAILURE=local"), "serve").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "PORTHOLE_REPLICAS") {
		t.Fatalf("local without the replica count: %v\n%s", err, out)
	}
}

// appendToken adds a principal to a tokens file and returns its token.
func appendToken(t *testing.T, file, name string) string {
	t.Helper()
	cmd := execPorthole(t, baseEnv(), "token", "new", "--name", name, "--tokens-file", file)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func getText(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSoakThreeReplicasSharingRedis (make soak runs it for SOAK): 24
// clients of one principal spread over three replicas for the soak's
// duration, Redis stopped and restarted in the middle third. Answered calls
// never exceed the one shared limit (burst + rate × time) plus what the
// local fallback could allow, and while Redis is down every call is
// refused with 503 (closed), never answered unlimited.
func TestSoakThreeReplicasSharingRedis(t *testing.T) {
	t.Parallel()
	d := soakDuration()
	redis := redistest.Start(t, redistest.Options{})
	file, token := newToken(t, "agent")
	const rate, burst = 20, 40
	rs := startReplicas(t, 3, redis.URL(), file, fmt.Sprintf("PORTHOLE_RATE_PER_PRINCIPAL=%d", rate), fmt.Sprintf("PORTHOLE_RATE_PER_PRINCIPAL_BURST=%d", burst))
	var (
		mu      sync.Mutex
		got     = map[int]int{}
		down    atomic.Bool
		okWhile int // answered while Redis was down
	)
	start := time.Now()
	stop := start.Add(d)
	var wg sync.WaitGroup
	for c := range 24 {
		wg.Go(func() {
			for i := c; time.Now().Before(stop); i += 24 {
				wasDown := down.Load()
				a := callRaw(rs[i%3].endpoint, token, "describe_namespace", nil)
				mu.Lock()
				got[a.status]++
				if wasDown && down.Load() && a.status == http.StatusOK {
					okWhile++
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(d / 3)
	// down is set once Redis is gone and cleared before it starts again:
	// a call begun while it is set cannot have been charged in Redis.
	redis.Stop()
	down.Store(true)
	time.Sleep(d / 3)
	down.Store(false)
	if err := redis.Restart(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	took := time.Since(start)
	// The restarted Redis is empty: its buckets start full, so the bound
	// allows one more burst.
	allowed := 2*burst + int(rate*took.Seconds()) + 1
	t.Logf("%v over three replicas: %v; %d answered (bound %d)", took, got, got[http.StatusOK], allowed)
	if got[http.StatusOK] > allowed || okWhile > 0 {
		t.Fatalf("answered %d (bound %d), %d of them while Redis was down", got[http.StatusOK], allowed, okWhile)
	}
	if got[http.StatusServiceUnavailable] == 0 || got[http.StatusOK] == 0 {
		t.Fatalf("statuses %v: want answers, 429s and the outage's 503s", got)
	}
	for status := range got {
		if status != http.StatusOK && status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
			t.Fatalf("statuses %v: a status that is neither an answer nor a refusal", got)
		}
	}
}
