package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/gateway"
	"github.com/porthole-dev/porthole/gateway/limit/redislimit"
)

// redisSettings share the rate limits and failed-auth counts of the
// replicas in Redis (docs/deployment.md).
type redisSettings struct {
	url, urlFile string
	prefix       string
	timeout      time.Duration
	failure      string
	replicas     int
}

func (r *redisSettings) register(s *settings) {
	s.string(&r.url, "redis-url", "PORTHOLE_REDIS_URL", "", "redis://[user:password@]host:port[/db] (rediss:// for TLS): keep the rate limits and failed-auth counts in this Redis, shared by every replica that uses it; prefer PORTHOLE_REDIS_URL_FILE when it holds a password")
	s.string(&r.urlFile, "redis-url-file", "PORTHOLE_REDIS_URL_FILE", "", "file holding the Redis URL (its password is then never in the environment; redacted everywhere)")
	s.string(&r.prefix, "redis-key-prefix", "PORTHOLE_REDIS_KEY_PREFIX", "", "start of every key porthole writes in Redis (default porthole:<Temporal namespace>); replicas that share limits share it")
	numeric(s, &r.timeout, "redis-timeout", "PORTHOLE_REDIS_TIMEOUT", 50*time.Millisecond, false, "a Redis answer slower than this is a failure")
	s.string(&r.failure, "redis-failure", "PORTHOLE_REDIS_FAILURE", "closed", "when Redis does not answer: closed refuses calls with 503; local limits each replica alone at 1/PORTHOLE_REPLICAS of each limit")
	numeric(s, &r.replicas, "replicas", "PORTHOLE_REPLICAS", 0, true, "how many replicas share the limits (the chart sets it); needed by PORTHOLE_REDIS_FAILURE=local")
}

// readURL reads the URL, before the redactor is made: its password is a
// secret the redactor is told. It refuses settings that mean nothing
// without a URL, and a failure mode it does not know.
func (r *redisSettings) readURL() (password string, err error) {
	if r.url != "" && r.urlFile != "" {
		return "", fmt.Errorf("%w: PORTHOLE_REDIS_URL and PORTHOLE_REDIS_URL_FILE are both set: choose one", errUsage)
	}
	if r.urlFile != "" {
		b, err := os.ReadFile(r.urlFile)
		if err != nil {
			return "", fmt.Errorf("%w: PORTHOLE_REDIS_URL_FILE: %v", errUsage, err)
		}
		r.url = strings.TrimSpace(string(b))
		if r.url == "" {
			return "", fmt.Errorf("%w: PORTHOLE_REDIS_URL_FILE %s is empty", errUsage, r.urlFile)
		}
	}
	switch r.failure {
	case "closed":
	case "local":
		if r.url != "" && r.replicas < 1 {
			return "", fmt.Errorf("%w: PORTHOLE_REDIS_FAILURE=local limits each replica at 1/PORTHOLE_REPLICAS of each limit: set PORTHOLE_REPLICAS to the number of replicas (the chart does)", errUsage)
		}
	default:
		return "", fmt.Errorf("%w: PORTHOLE_REDIS_FAILURE=%q: it is closed (refuse calls while Redis does not answer) or local (limit each replica alone)", errUsage, r.failure)
	}
	if r.url == "" && (r.prefix != "" || r.failure != "closed") {
		return "", fmt.Errorf("%w: a Redis setting is given without PORTHOLE_REDIS_URL or PORTHOLE_REDIS_URL_FILE", errUsage)
	}
	return redislimit.Password(r.url), nil
}

// options sets o.Shared when a Redis URL is given, and checks once whether
// Redis answers: if not, it says so, and calls are refused (or limited
// locally) until it does, which porthole finds out by itself.
func (r *redisSettings) options(ctx context.Context, o *gateway.HTTPOptions, namespace string, log *zap.Logger) (closeStore func(), err error) {
	if r.url == "" {
		return func() {}, nil
	}
	prefix := r.prefix
	if prefix == "" {
		prefix = "porthole:" + namespace
	}
	every := o.FailedAuthEvery
	if every <= 0 {
		every = gateway.DefaultFailedAuthEvery
	}
	burst := o.FailedAuthBurst
	if burst <= 0 {
		burst = 10
	}
	store, err := redislimit.New(redislimit.Options{URL: r.url, Prefix: prefix, Limits: o.Limits, FailedAuthBurst: burst, FailedAuthEvery: every, Timeout: r.timeout})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	warnPlaintextRedis(r.url, log)
	o.Shared = &gateway.SharedLimits{Store: store, Timeout: r.timeout}
	if r.failure == "local" {
		o.Shared.FallbackReplicas = r.replicas
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := store.Probe(pctx); err != nil {
		log.Error("Redis does not answer at start: calls are refused with 503 (or limited locally with PORTHOLE_REDIS_FAILURE=local) until it does", zap.Error(err))
	} else {
		log.Info("rate limits and failed-auth counts are shared in Redis", zap.String("keyPrefix", prefix), zap.String("failure", r.failure))
	}
	return func() { store.Close() }, nil
}

// warnPlaintextRedis warns, at every start, when rawURL is a redis:// URL
// (no TLS) to a host that is not loopback: the shared rate-limit state and
// the Redis password then cross a network unencrypted. Only the host is
// named; the URL holds the password.
func warnPlaintextRedis(rawURL string, log *zap.Logger) {
	if host, ok := redislimit.PlaintextHost(rawURL); ok && !loopback(host) {
		log.Warn("WARNING: the connection to Redis at "+host+" is plaintext (redis://) and the address is not loopback: it carries the shared rate-limit state and the Redis password in clear; use rediss://", zap.String("redisHost", host))
	}
}

// loopback reports whether host names this machine: localhost (in any
// case), a loopback address (127.0.0.0/8, ::1), or no host at all, which
// the Redis client dials on this machine.
func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()
}
