package main

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// warnings are the WARNING lines logs holds, each with its fields.
func warnings(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.FilterLevelExact(zap.WarnLevel).All() {
		if strings.HasPrefix(e.Message, "WARNING: ") {
			out = append(out, e.Message+" "+strings.TrimSpace(strings.Join(fieldValues(e.ContextMap()), " ")))
		}
	}
	return out
}

func fieldValues(m map[string]any) []string {
	var out []string
	for _, v := range m {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// A redis:// URL to a host that is not loopback is warned of, naming the
// host, what crosses in clear and rediss://, but never the password; one
// to loopback, or a rediss:// one, is not.
func TestPlaintextRedisBeyondLoopbackIsWarned(t *testing.T) {
	t.Parallel()
	const password = "s3cret-redis-password"
	for _, c := range []struct {
		url, wantHost string
	}{
		{"redis://:" + password + "@redis.example.com:6379/0", "redis.example.com"},
		{"redis://porthole:" + password + "@10.0.0.7:6379", "10.0.0.7"},
		{"redis://[2001:db8::7]:6379", "2001:db8::7"},
		{"redis://localhost:6379", ""},
		{"redis://LOCALHOST:6379", ""},
		{"redis://127.0.0.1:6379", ""},
		{"redis://127.8.9.10:6379", ""},
		{"redis://[::1]:6379", ""},
		{"redis://:" + password + "@/0", ""},
		{"rediss://:" + password + "@redis.example.com:6380", ""},
		{"unix:///run/redis.sock", ""},
	} {
		core, logs := observer.New(zap.InfoLevel)
		warnPlaintextRedis(c.url, zap.New(core))
		got := warnings(logs)
		switch {
		case c.wantHost == "" && len(got) != 0:
			t.Errorf("%s: warned %q", c.url, got)
		case c.wantHost == "":
		case len(got) != 1:
			t.Errorf("%s: %d warnings %q; want one", c.url, len(got), got)
		case !strings.Contains(got[0], "Redis at "+c.wantHost+" is plaintext") || !strings.Contains(got[0], "rate-limit state and the Redis password in clear") || !strings.Contains(got[0], "rediss://"):
			t.Errorf("%s: %q", c.url, got[0])
		case strings.Contains(got[0], password):
			t.Errorf("%s: the warning holds the password: %q", c.url, got[0])
		}
	}
}

// Traces exported in plaintext, as the OTEL_* variables decide it for the
// exporter (the endpoint's scheme, the traces' own endpoint over the
// general one, INSECURE over either), to a host that is not loopback are
// warned of, naming the host, what crosses in clear and https; loopback, a
// unix socket or TLS is not.
func TestPlaintextOTLPBeyondLoopbackIsWarned(t *testing.T) {
	for _, c := range []struct {
		endpoint, tracesEndpoint, insecure, protocol string
		wantHost                                     string
	}{
		{"http://collector.example.com:4318", "", "", "", "collector.example.com"},
		{"HTTP://10.1.2.3:4318", "", "", "", "10.1.2.3"},
		{"https://collector.example.com:4318", "", "true", "", "collector.example.com"},
		{"https://localhost:4318", "http://collector.example.com:4318/v1/traces", "", "", "collector.example.com"},
		{"otel-collector.monitoring:4317", "", "true", "grpc", "otel-collector.monitoring"},
		{"http://localhost:4318", "", "", "", ""},
		{"http://127.0.0.1:4318", "", "", "", ""},
		{"http://[::1]:4318", "", "", "", ""},
		{"https://collector.example.com:4318", "", "", "", ""},
		{"http://collector.example.com:4318", "", "false", "", ""},
		{"http://collector.example.com:4318", "https://collector.example.com:4318/v1/traces", "", "", ""},
		{"collector.example.com:4317", "", "", "grpc", ""},
		{"unix:///run/otel.sock", "", "", "grpc", ""},
	} {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.endpoint)
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", c.tracesEndpoint)
		t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", c.insecure)
		core, logs := observer.New(zap.InfoLevel)
		exp, err := otlpExporter(context.Background(), c.protocol, zap.New(core))
		if err != nil {
			t.Errorf("%q, %q, insecure %q: %v", c.endpoint, c.tracesEndpoint, c.insecure, err)
			continue
		}
		exp.Shutdown(context.Background())
		got := warnings(logs)
		switch {
		case c.wantHost == "" && len(got) != 0:
			t.Errorf("%q, %q, insecure %q: warned %q", c.endpoint, c.tracesEndpoint, c.insecure, got)
		case c.wantHost == "":
		case len(got) != 1:
			t.Errorf("%q, %q, insecure %q: %d warnings %q; want one", c.endpoint, c.tracesEndpoint, c.insecure, len(got), got)
		case !strings.Contains(got[0], "exported to "+c.wantHost+" in plaintext") || !strings.Contains(got[0], "travel in clear") || !strings.Contains(got[0], "https://"):
			t.Errorf("%q, %q, insecure %q: %q", c.endpoint, c.tracesEndpoint, c.insecure, got[0])
		}
	}
}
