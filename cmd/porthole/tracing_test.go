package main

import (
	"strings"
	"testing"

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
