package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"
)

const stdioSummary = `Serve MCP over stdin and stdout for a local MCP client (Claude Code, Cursor,
the MCP Inspector). The caller is principal "local". Logs go to stderr.`

func runStdio(args []string, stderr io.Writer) error {
	var ts temporalSettings
	s := newSettings("stdio", stdioSummary, stderr)
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
	g, closeAll, err := dialGateway(ctx, &as, c)
	if err != nil {
		return err
	}
	defer closeAll()
	log.Info("serving MCP over stdio", zap.String("namespace", cfg.Namespace), zap.String("version", Version()))
	return g.ServeStdio(ctx, os.Stdin, os.Stdout)
}
