// Package temporal is porthole's only door to Temporal: it validates the
// connection settings, dials with a read-only guard on the wire, and adapts
// Temporal's protobuf answers into the payload-free types of package read.
//
// # Trust model
//
// This package holds the credentials and the SDK client, and hands out
// neither. What leaves it is a [read.Reader] whose methods only read, whose
// namespace is fixed at [Dial], and whose results are built field by field
// from what Temporal returned, copying only identifiers, times, counts,
// enums, and free text wrapped as quoted [quote.Text]. Payload fields
// (inputs, results, memo, headers, search-attribute values, heartbeat and
// failure details) are never read.
//
// Read-only holds three walls deep. The tool set is fixed in the gateway;
// [read.Reader] has no writing method; and the gRPC connection carries an
// interceptor that refuses every method not on an explicit list of read RPCs
// before it reaches the network.
//
// A configuration that is half filled is refused by [Config.Validate] with a
// sentence naming what is missing, and a namespace that does not exist is
// refused at [Dial], not discovered later call by call.
package temporal

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/grpc"

	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/read"
)

// dialTimeout bounds the whole dial: connect, handshake, namespace check.
const dialTimeout = 15 * time.Second

// Dial validates cfg, connects to Temporal with the read-only guard, and
// confirms that the namespace exists. logger receives the SDK's own log lines;
// it must not write to stdout, which the stdio transport owns. A nil logger
// discards them.
func Dial(ctx context.Context, cfg Config, logger *slog.Logger) (*Adapter, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	opts := client.Options{
		HostPort:  cfg.Address,
		Namespace: cfg.Namespace,
		Logger:    sdklog.NewStructuredLogger(logger),
		ConnectionOptions: client.ConnectionOptions{
			TLS:         tlsCfg,
			TLSDisabled: tlsCfg == nil,
			DialOptions: []grpc.DialOption{
				grpc.WithChainUnaryInterceptor(readOnlyGuard, undecodedPayloads),
				grpc.WithChainStreamInterceptor(streamGuard),
			},
		},
	}
	if cfg.TracerProvider != nil {
		opts.ConnectionOptions.DialOptions = append(opts.ConnectionOptions.DialOptions, grpc.WithChainUnaryInterceptor(tracedCalls(cfg.TracerProvider, cfg.Address)))
	}
	if cfg.Compression == "none" {
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	if cfg.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(cfg.APIKey)
	}

	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: dialing %s: %v", read.ErrUnavailable, cfg.Address, err)
	}
	a := &Adapter{client: c, namespace: cfg.Namespace, now: time.Now, conv: conv{q: quote.New(cfg.Redactor)}}

	// client.Dial does not check that the namespace exists; do it here so
	// that a typo is a start-up error rather than a failure on every call.
	if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: cfg.Namespace}); err != nil {
		c.Close()
		err = classify(err)
		if isNotFound(err) {
			return nil, fmt.Errorf("%w: the namespace %q does not exist at %s", read.ErrNotFound, cfg.Namespace, cfg.Address)
		}
		return nil, fmt.Errorf("checking the namespace %q: %w", cfg.Namespace, err)
	}
	if info, err := c.WorkflowService().GetSystemInfo(ctx, &workflowservice.GetSystemInfoRequest{}); err == nil {
		a.serverVersion = info.GetServerVersion()
	}
	return a, nil
}
