package redislimit

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/porthole-dev/porthole/gateway/limit"
	"github.com/porthole-dev/porthole/gateway/limit/redislimit/redistest"
)

// BenchmarkCharge is the store's charge, which porthole makes per call
// with shared limits (a principal's bucket and the global one, one
// script), made serially against a real redis-server; limit.Shared's
// timeout context, breaker check and metrics around it are not in it. It reports the CPU it costs this
// process (cpu-ns/op: go-redis, the syscalls) and redis-server
// (redis-cpu-ns/op: the script and its I/O, from INFO cpu; script-ns/op:
// the script alone, from INFO commandstats), which on the bench's machine
// comes out of the same cores (docs/performance.md, Limits shared in
// Redis).
func BenchmarkCharge(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{})
	high := limit.Limits{PerPrincipal: 1e9, PerPrincipalBurst: 1e9, Global: 1e9, GlobalBurst: 1e9}
	s, err := New(Options{URL: srv.URL(), Prefix: "porthole:bench", Limits: high, FailedAuthBurst: 1, FailedAuthEvery: time.Second, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	info := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer info.Close()
	ctx := context.Background()
	if _, err := s.Charge(ctx, "warm", 1, true); err != nil {
		b.Fatal(err)
	}
	principals := make([]string, 100)
	for i := range principals {
		principals[i] = "principal-" + strconv.Itoa(i)
	}
	redisBefore, cpuBefore, scriptBefore := redisCPU(b, info), processCPU(), scriptTime(b, info)
	i := 0
	for b.Loop() {
		if ref, err := s.Charge(ctx, principals[i%len(principals)], 1, true); err != nil || ref != nil {
			b.Fatal(ref, err)
		}
		i++
	}
	b.ReportMetric(float64(processCPU()-cpuBefore)/float64(i), "cpu-ns/op")
	b.ReportMetric(float64(redisCPU(b, info)-redisBefore)/float64(i), "redis-cpu-ns/op")
	b.ReportMetric(float64(scriptTime(b, info)-scriptBefore)/float64(i), "script-ns/op")
}

// scriptTime is the time redis-server has spent running EVALSHA so far
// (INFO commandstats: cmdstat_evalsha's usec).
func scriptTime(b *testing.B, c *redis.Client) time.Duration {
	text, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, "cmdstat_evalsha:"); ok {
			for _, field := range strings.Split(v, ",") {
				if us, ok := strings.CutPrefix(field, "usec="); ok {
					n, _ := strconv.ParseInt(us, 10, 64)
					return time.Duration(n) * time.Microsecond
				}
			}
		}
	}
	b.Fatal("INFO commandstats names no cmdstat_evalsha")
	return 0
}

// redisCPU is redis-server's CPU so far (INFO cpu: used_cpu_sys and
// used_cpu_user, its main thread's and its others').
func redisCPU(b *testing.B, c *redis.Client) time.Duration {
	text, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_cpu_sys:"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			sum += f
		} else if v, ok := strings.CutPrefix(line, "used_cpu_user:"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			sum += f
		}
	}
	return time.Duration(sum * float64(time.Second))
}

// processCPU is this process's user and system CPU so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
