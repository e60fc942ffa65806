package main

import (
	"context"
	"fmt"
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
	if writesTo(as.path, os.Stdout) {
		// stdout carries the protocol: audit lines there would corrupt the
		// client's stream, and go to whoever reads it rather than to a log.
		return fmt.Errorf("%w: $PORTHOLE_AUDIT_LOG=%q is standard output, which porthole stdio speaks MCP on; use a file or stderr", errUsage, as.path)
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
	log.Info("serving MCP over stdio", zap.String("namespace", cfg.Namespace), buildField())
	return g.ServeStdio(ctx, os.Stdin, os.Stdout)
}

// writesTo reports whether the audit log setting path names f: "stdout"
// for os.Stdout, or any path to the same file (/dev/stdout, /proc/self/fd/1,
// the file stdout is redirected to).
func writesTo(path string, f *os.File) bool {
	if path == "stdout" && f == os.Stdout {
		return true
	}
	a, err := os.Stat(path)
	if err != nil {
		return false
	}
	b, err := f.Stat()
	return err == nil && os.SameFile(a, b)
}
