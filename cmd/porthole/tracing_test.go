package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/gateway/tlsclient"

	"go.opentelemetry.io/otel/attribute"

	"github.com/porthole-dev/porthole/redact"
)

// TestSpanAttributesAreRedactedAndCopiedOnlyWhenChanged: the exporter's
// wall redacts a secret in a string or a string slice, replaces values
// that could nest strings, and hands a span's attributes on unchanged
// (not copied) when there is nothing to redact.
func TestSpanAttributesAreRedactedAndCopiedOnlyWhenChanged(t *testing.T) {
	t.Parallel()
	red, _ := redact.New()
	secret := "ghp_" + strings.Repeat("A", 36)
	clean := []attribute.KeyValue{attribute.String("http.request.method", "POST"), attribute.Int("n", 3)}
	if out := redactAttrs(red, clean); &out[0] != &clean[0] {
		t.Fatal("clean attributes were copied")
	}
	kvs := []attribute.KeyValue{attribute.String("a", "ok"), attribute.String("user_agent.original", "agent "+secret),
		attribute.StringSlice("s", []string{"x", secret}), attribute.Int("n", 1)}
	out := redactAttrs(red, kvs)
	for _, kv := range out {
		if strings.Contains(kv.Value.String(), secret) {
			t.Fatalf("%s still holds the secret: %s", kv.Key, kv.Value.String())
		}
	}
	if out[0].Value.AsString() != "ok" || out[3].Value.AsInt64() != 1 || kvs[1].Value.AsString() != "agent "+secret {
		t.Fatalf("redactAttrs changed what it should keep, or the span's own attributes: %v / %v", out, kvs)
	}
	if got, changed := redactAttr(red, attribute.KeyValue{Key: "m", Value: attribute.MapValue(attribute.String("k", secret))}); !changed || strings.Contains(got.Value.String(), secret) {
		t.Fatalf("a map value was exported: %v", got)
	}
}

// An OTLP collector reached over TLS, as the exporter decides it from the
// OTEL_* variables, is offered porthole's TLS versions and suites, with the
// CA the variables name; one reached in plaintext gets no TLS
// configuration, and its host is named for the warning.
func TestTheOTLPLinkOffersOnlyPortholesSuites(t *testing.T) {
	for _, c := range []struct {
		endpoint, insecure string
		wantTLS            bool
		wantHost           string
	}{
		{"https://collector.example.com:4318", "", true, ""},
		{"HTTPS://collector.example.com:4318", "", true, ""},
		{"collector.example.com:4317", "", true, ""},
		{"dns:///collector.example.com:4317", "", true, ""},
		{"", "", true, ""},
		{"http://127.0.0.1:4318", "", false, "127.0.0.1"},
		{"http://collector.example.com:4318", "false", true, ""},
		{"https://collector.example.com:4318", "true", false, "collector.example.com"},
		{"otel-collector.monitoring:4317", "true", false, "otel-collector.monitoring"},
		{"unix:///run/otel.sock", "", false, ""},
	} {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.endpoint)
		t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", c.insecure)
		cfg, host, err := otlpTLS()
		switch {
		case err != nil:
			t.Errorf("%q, insecure %q: %v", c.endpoint, c.insecure, err)
		case (cfg != nil) != c.wantTLS || host != c.wantHost:
			t.Errorf("%q, insecure %q: TLS %v, host %q; want TLS %v, host %q", c.endpoint, c.insecure, cfg != nil, host, c.wantTLS, c.wantHost)
		case cfg != nil && !slices.Equal(cfg.CipherSuites, tlsclient.Suites):
			t.Errorf("%q: suites %v", c.endpoint, cfg.CipherSuites)
		}
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.example.com:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", filepath.Join(t.TempDir(), "absent.pem"))
	if _, _, err := otlpTLS(); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_CERTIFICATE") {
		t.Errorf("an unreadable collector CA: %v", err)
	}
}
