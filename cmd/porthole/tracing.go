package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"
	"google.golang.org/grpc/credentials"

	"github.com/porthole-dev/porthole/gateway"
	"github.com/porthole-dev/porthole/gateway/tlsclient"
	"github.com/porthole-dev/porthole/redact"
)

// tracingSettings are porthole's own tracing settings; the rest are the
// standard OTEL_* variables, which the OpenTelemetry SDK reads itself
// (docs/configuration.md, Traces).
type tracingSettings struct {
	trustTraceparent bool
	principalOnSpans bool
}

func (t *tracingSettings) register(s *settings) {
	s.bool(&t.trustTraceparent, "otel-trust-traceparent", "PORTHOLE_OTEL_TRUST_TRACEPARENT",
		"continue a client's trace (its traceparent header) instead of starting a new one linked to it: only behind trusted internal callers")
	s.bool(&t.principalOnSpans, "otel-principal", "PORTHOLE_OTEL_PRINCIPAL",
		"put the principal on each call's span (enduser.id); principal names can be personal data")
}

// tracesOn says whether the environment asks for traces: an OTLP endpoint
// is named (OTEL_EXPORTER_OTLP_ENDPOINT or _TRACES_ENDPOINT), or
// OTEL_TRACES_EXPORTER=otlp; never with OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none. An exporter porthole does not have is refused.
func tracesOn() (bool, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch exp := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q: porthole exports traces over OTLP only (otlp, or none)", errUsage, exp)
	}
}

// check refuses OTEL_* settings porthole cannot follow, at start, before
// anything waits (a serve without tokens waits unconfigured).
func (t *tracingSettings) check() error {
	if on, err := tracesOn(); err != nil || !on {
		return err
	}
	switch p := otlpProtocol(); p {
	case "", "http/protobuf", "grpc":
		return nil
	default:
		return fmt.Errorf("%w: OTEL_EXPORTER_OTLP_PROTOCOL=%q: porthole exports with http/protobuf (the default) or grpc", errUsage, p)
	}
}

// otlpProtocol is the OTLP protocol the environment names for traces.
func otlpProtocol() string {
	if p := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p != "" {
		return p
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
}

// otlpEnv is the traces' own OTEL_EXPORTER_OTLP_TRACES_<name>, or else
// OTEL_EXPORTER_OTLP_<name>.
func otlpEnv(name string) string {
	if v := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
		return v
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_" + name)
}

// otlpTLS decides, as the OTLP exporters read the OTEL_* variables, whether
// traces travel over TLS: an endpoint whose scheme is http or unix does
// not, any other (or none named) does, and OTEL_EXPORTER_OTLP_INSECURE
// overrides either, each traces-only variable after the general one. Over
// TLS, the configuration is porthole's versions and suites
// (gateway/tlsclient) with the CA and client certificate the variables
// name, which the exporter reads only when given no configuration of
// porthole's; in plaintext, it is nil, and host is the endpoint's host.
func otlpTLS() (cfg *tls.Config, host string, err error) {
	secure, host := otlpEndpoint()
	if !secure {
		return nil, host, nil
	}
	cfg = tlsclient.Config()
	if ca := otlpEnv("CERTIFICATE"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, "", fmt.Errorf("%w: the OTLP collector's CA (OTEL_EXPORTER_OTLP_CERTIFICATE): %v", errUsage, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, "", fmt.Errorf("%w: the OTLP collector's CA file %s holds no PEM certificate", errUsage, ca)
		}
	}
	if cert, key := otlpEnv("CLIENT_CERTIFICATE"), otlpEnv("CLIENT_KEY"); cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, "", fmt.Errorf("%w: porthole's client certificate for the OTLP collector (OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY): %v", errUsage, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, "", nil
}

// otlpEndpoint reads, as the exporters do, whether the OTLP endpoint is
// reached over TLS, and its host (none for a unix socket).
func otlpEndpoint() (secure bool, host string) {
	secure = true
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		v := os.Getenv(name)
		u, err := url.Parse(v)
		if v == "" || err != nil {
			continue
		}
		scheme := strings.ToLower(u.Scheme)
		secure = scheme != "http" && scheme != "unix"
		host = u.Hostname()
		if !strings.Contains(v, "://") {
			if u, err := url.Parse("//" + v); err == nil {
				host = u.Hostname()
			}
		}
		if scheme == "unix" {
			host = ""
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE"} {
		if v := os.Getenv(name); v != "" {
			secure = !strings.EqualFold(v, "true")
		}
	}
	return secure, host
}

// otlpExporter is the OTLP exporter of protocol (http/protobuf by
// default, or grpc), over TLS with porthole's configuration where the
// endpoint is reached over TLS, with a warning at every start where it is
// plaintext beyond loopback.
func otlpExporter(ctx context.Context, protocol string, log *zap.Logger) (sdktrace.SpanExporter, error) {
	tlsCfg, plainHost, err := otlpTLS()
	if err != nil {
		return nil, err
	}
	warnPlaintextOTLP(plainHost, log)
	var exp sdktrace.SpanExporter
	switch {
	case (protocol == "" || protocol == "http/protobuf") && tlsCfg != nil:
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithTLSClientConfig(tlsCfg))
	case protocol == "" || protocol == "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case protocol == "grpc" && tlsCfg != nil:
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithTLSCredentials(credentials.NewTLS(tlsCfg)))
	case protocol == "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("%w: OTEL_EXPORTER_OTLP_PROTOCOL=%q: porthole exports with http/protobuf (the default) or grpc", errUsage, protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: the OTLP trace exporter: %v", errUsage, err)
	}
	return exp, nil
}

// warnPlaintextOTLP warns, at every start, when traces are exported in
// plaintext (host is the endpoint's host then, as otlpTLS gives it; empty
// over TLS or a unix socket, which are not warned of) to a host that is
// not loopback: the spans then cross a network unencrypted.
func warnPlaintextOTLP(host string, log *zap.Logger) {
	if host != "" && !loopback(host) {
		log.Warn("WARNING: traces are exported to "+host+" in plaintext and the address is not loopback: spans (tool names, request ids, client addresses, and principals with PORTHOLE_OTEL_PRINCIPAL) travel in clear; use an https:// endpoint and leave OTEL_EXPORTER_OTLP_INSECURE unset", zap.String("otlpHost", host))
	}
}

// startTracing makes the tracer provider the OTEL_* variables describe, or
// returns nil when they ask for none: then porthole makes no span at all.
// Spans go through red, the redactor of everything else that leaves,
// before they are exported (redactingExporter). shutdown flushes.
func (t *tracingSettings) startTracing(ctx context.Context, red *redact.Redactor, log *zap.Logger) (tr *gateway.Tracing, shutdown func(), err error) {
	on, err := tracesOn()
	if err != nil || !on {
		return nil, func() {}, err
	}
	protocol := otlpProtocol()
	exp, err := otlpExporter(ctx, protocol, log)
	if err != nil {
		return nil, nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "porthole"), attribute.String("service.version", Version())),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, nil, fmt.Errorf("%w: OTEL_RESOURCE_ATTRIBUTES or OTEL_SERVICE_NAME: %v", errUsage, err)
	}
	// Export failures go to the operations log (redacted like every line
	// of it), not to the SDK's own stderr logger.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("traces not exported", zap.Error(err))
	}))
	// The sampler is the SDK's from OTEL_TRACES_SAMPLER (parent-based
	// always-on by default); the batcher reads OTEL_BSP_*.
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(redactingExporter{exp, red}))
	log.Info("exporting traces over OTLP", zap.String("protocol", cmp.Or(protocol, "http/protobuf")),
		zap.Bool("trustTraceparent", t.trustTraceparent), zap.Bool("principalOnSpans", t.principalOnSpans))
	shutdown = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			log.Warn("traces not all exported at shutdown", zap.Error(err))
		}
	}
	return &gateway.Tracing{Provider: tp, TrustTraceparent: t.trustTraceparent, PrincipalOnSpans: t.principalOnSpans}, shutdown, nil
}

// redactingExporter passes every span through the redactor before the
// exporter sees it: the span's name, the string values of its attributes,
// its events' and its links' attributes, and its status. porthole's own
// spans carry no argument, no result and nothing a client wrote; this is
// the wall behind that.
type redactingExporter struct {
	sdktrace.SpanExporter
	red *redact.Redactor
}

func (e redactingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		out[i] = redactedSpan{ReadOnlySpan: s, red: e.red}
	}
	return e.SpanExporter.ExportSpans(ctx, out)
}

// redactedSpan is a span as redactingExporter passes it on.
type redactedSpan struct {
	sdktrace.ReadOnlySpan
	red *redact.Redactor
}

func (s redactedSpan) Name() string {
	n, _ := s.red.String(s.ReadOnlySpan.Name())
	return n
}

func (s redactedSpan) Attributes() []attribute.KeyValue {
	return redactAttrs(s.red, s.ReadOnlySpan.Attributes())
}

// Events are the span's events with their names and attributes redacted.
// An exception's message and stack are an error's words, as a status
// description is: left out. The events are copied only when that changes
// one: porthole's link events (a name of its own, an outcome or a figure)
// pass as they are, and a call has eight of them.
func (s redactedSpan) Events() []sdktrace.Event {
	evs := s.ReadOnlySpan.Events()
	var out []sdktrace.Event
	for i, e := range evs {
		ne, changed := redactEvent(s.red, e)
		if changed && out == nil {
			out = make([]sdktrace.Event, len(evs))
			copy(out, evs[:i])
		}
		if out != nil {
			out[i] = ne
		}
	}
	if out == nil {
		return evs
	}
	return out
}

// redactEvent is e redacted, and whether that changed it.
func redactEvent(red *redact.Redactor, e sdktrace.Event) (sdktrace.Event, bool) {
	name, _ := red.String(e.Name)
	changed := name != e.Name
	e.Name = name
	attrs := e.Attributes
	for i, kv := range attrs {
		if kv.Key == "exception.message" || kv.Key == "exception.stacktrace" {
			kept := make([]attribute.KeyValue, 0, len(attrs))
			kept = append(kept, attrs[:i]...)
			for _, kv := range attrs[i:] {
				if kv.Key != "exception.message" && kv.Key != "exception.stacktrace" {
					kept = append(kept, kv)
				}
			}
			attrs, changed = kept, true
			break
		}
	}
	redacted, attrsChanged := redactKVs(red, attrs)
	e.Attributes = redacted
	return e, changed || attrsChanged
}

func (s redactedSpan) Links() []sdktrace.Link {
	ls := s.ReadOnlySpan.Links()
	var out []sdktrace.Link
	for i, l := range ls {
		attrs, changed := redactKVs(s.red, l.Attributes)
		if changed && out == nil {
			out = make([]sdktrace.Link, len(ls))
			copy(out, ls[:i])
		}
		if out != nil {
			l.Attributes = attrs
			out[i] = l
		}
	}
	if out == nil {
		return ls
	}
	return out
}

// Status keeps the code and drops the description: an instrumentation can
// write an error's message there, and Temporal's quotes what the client
// asked for ("workflow not found for ID: <the argument>"), which no
// redactor knows.
func (s redactedSpan) Status() sdktrace.Status {
	st := s.ReadOnlySpan.Status()
	st.Description = ""
	return st
}

// redactAttrs is kvs with every string value redacted and every value
// that can nest strings replaced.
func redactAttrs(red *redact.Redactor, kvs []attribute.KeyValue) []attribute.KeyValue {
	out, _ := redactKVs(red, kvs)
	return out
}

// redactKVs is redactAttrs, and whether it changed anything. It copies kvs
// only from the first value it changes: most spans have nothing to
// redact, and a copy of each span's attributes was a good part of what
// tracing allocated.
func redactKVs(red *redact.Redactor, kvs []attribute.KeyValue) ([]attribute.KeyValue, bool) {
	var out []attribute.KeyValue
	for i, kv := range kvs {
		if nkv, changed := redactAttr(red, kv); changed {
			if out == nil {
				out = make([]attribute.KeyValue, len(kvs))
				copy(out, kvs[:i])
			}
			out[i] = nkv
		} else if out != nil {
			out[i] = kv
		}
	}
	if out == nil {
		return kvs, false
	}
	return out, true
}

// redactAttr is kv redacted, and whether that changed it.
func redactAttr(red *redact.Redactor, kv attribute.KeyValue) (attribute.KeyValue, bool) {
	switch kv.Value.Type() {
	case attribute.STRING:
		v, _ := red.String(kv.Value.AsString())
		if v == kv.Value.AsString() {
			return kv, false
		}
		kv.Value = attribute.StringValue(v)
		return kv, true
	case attribute.STRINGSLICE:
		vs := kv.Value.AsStringSlice()
		changed := false
		for j := range vs {
			v, _ := red.String(vs[j])
			changed = changed || v != vs[j]
			vs[j] = v
		}
		if !changed {
			return kv, false
		}
		kv.Value = attribute.StringSliceValue(vs)
		return kv, true
	case attribute.BOOL, attribute.INT64, attribute.FLOAT64, attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE:
		return kv, false
	}
	// Values that can nest strings (slices of values, maps, bytes):
	// nothing porthole or its instrumentations set today; not exported
	// rather than walked.
	kv.Value = attribute.StringValue("[not exported by porthole]")
	return kv, true
}
