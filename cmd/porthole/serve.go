package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/gateway"
	"github.com/porthole-dev/porthole/temporal"
)

const serveSummary = `Serve MCP over streamable HTTP at POST /mcp, stateless, with JSON responses.
Every request needs "Authorization: Bearer <token>" with a token whose digest is in
the tokens file (make one with 'porthole token new'). Without a tokens file the
HTTP listener is not started, unless authentication is deliberately switched off.`

// shutdownGrace bounds how long SIGTERM waits for calls in flight.
const shutdownGrace = 10 * time.Second

func runServe(args []string, stderr io.Writer) error {
	var (
		ts         temporalSettings
		addr       string
		tokensFile string
		noAuth     bool
	)
	s := newSettings("serve", serveSummary, stderr)
	s.string(&addr, "addr", "PORTHOLE_ADDR", "127.0.0.1:8082", "address the MCP listener binds")
	s.string(&tokensFile, "tokens-file", "PORTHOLE_TOKENS_FILE", "", "file of principal names and token digests")
	s.bool(&noAuth, "dangerously-serve-without-authentication", "PORTHOLE_DANGEROUSLY_SERVE_WITHOUT_AUTHENTICATION",
		"serve everyone as principal \"anonymous\" with no token; logged at every start")
	ts.register(s)
	var as auditSettings
	as.register(s)
	if err := s.parse(args); err != nil {
		return err
	}
	c, err := ts.setup(&as)
	if err != nil {
		return err
	}
	log, cfg := c.log, c.cfg
	defer log.Sync()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var tokens *gateway.Tokens
	if tokensFile != "" {
		if tokens, err = gateway.LoadTokens(tokensFile); err != nil {
			return err
		}
	}
	if tokens.Len() == 0 && !noAuth {
		// Not a crash: an orchestrator would only restart us into the same
		// state. Serve nothing and say why until stopped.
		log.Warn("WARNING: no token is configured, so the MCP listener is not started and nothing is served on its port. " +
			"Make a token with 'porthole token new --name NAME --tokens-file FILE' and set PORTHOLE_TOKENS_FILE.")
		<-ctx.Done()
		return nil
	}
	if noAuth {
		log.Warn("WARNING: PORTHOLE_DANGEROUSLY_SERVE_WITHOUT_AUTHENTICATION is set: anyone who reaches " + addr +
			" can read the Temporal namespace " + cfg.Namespace + " as principal \"anonymous\"")
	}

	adapter, err := temporal.Dial(ctx, cfg, c.sdkLog)
	if err != nil {
		return err
	}
	defer adapter.Close()

	g, closeAudit, err := newGateway(adapter, &as, c)
	if err != nil {
		return err
	}
	defer closeAudit()
	httpOpts := gateway.HTTPOptions{DangerouslyServeWithoutAuthentication: noAuth}
	if !noAuth {
		httpOpts.Tokens = func() *gateway.Tokens { return tokens }
	}
	h, err := g.Handler(httpOpts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	log.Info("serving MCP", zap.String("addr", ln.Addr().String()), zap.String("endpoint", "http://"+ln.Addr().String()+"/mcp"),
		zap.String("namespace", cfg.Namespace), zap.Int("principals", tokens.Len()), zap.String("version", Version()))
	err = gateway.Serve(ctx, gateway.NewHTTPServer(h, log), ln, shutdownGrace)
	log.Info("stopped")
	return err
}
