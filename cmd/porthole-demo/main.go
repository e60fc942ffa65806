// Command porthole-demo starts everything a new user needs to try porthole
// on one machine: a real Temporal dev server on loopback, sample workflows
// (running, completed, failed, a child, a schedule), a token, and
// `porthole serve`; then it prints how to connect and waits for Ctrl-C,
// which stops everything it started.
//
// It writes to Temporal (it seeds workflows and runs their worker), so it is
// a separate binary: nothing of it is in porthole's dependency graph.
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/tokens"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "porthole-demo:", err)
		os.Exit(1)
	}
}

// credentials are the demo's token and audit key, in its state directory.
type credentials struct {
	tokensFile, token, auditLog, auditKey string
}

// demoCredentials makes a token for principal "demo" and an audit key of
// the demo's own: one made from the token would let whoever holds the
// token forge the demo's audit records.
func demoCredentials(state string) (credentials, error) {
	c := credentials{tokensFile: filepath.Join(state, "tokens"), auditLog: filepath.Join(state, "audit.log"), auditKey: filepath.Join(state, "audit.key")}
	var err error
	if c.token, err = tokens.Append(c.tokensFile, "demo"); err != nil {
		return c, err
	}
	step("made a token for principal \"demo\" in " + c.tokensFile)
	err = os.WriteFile(c.auditKey, []byte(hex.EncodeToString(audit.NewKey())+"\n"), 0o600)
	return c, err
}

// startPorthole starts porthole serve on listen, logging to the state
// directory, and waits until it says where it serves; exited says when it
// stops. The log, once open, is the caller's to close, error or not.
func startPorthole(ctx context.Context, bin, state, listen, hostPort, namespace string, c credentials) (endpoint string, exited chan error, plog *os.File, err error) {
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(os.Environ(),
		"TEMPORAL_ADDRESS="+hostPort,
		"TEMPORAL_NAMESPACE="+namespace,
		"PORTHOLE_ADDR="+listen,
		"PORTHOLE_TOKENS_FILE="+c.tokensFile,
		"PORTHOLE_AUDIT_LOG="+c.auditLog,
		"PORTHOLE_AUDIT_KEY_FILE="+c.auditKey,
	)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	if plog, err = os.Create(filepath.Join(state, "porthole.log")); err != nil {
		return "", nil, nil, err
	}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(plog, pw)
	if err := cmd.Start(); err != nil {
		plog.Close()
		return "", nil, nil, err
	}
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()
	if endpoint, err = waitForEndpoint(pr, exited); err != nil {
		// The log stays open for the caller to close: porthole may still
		// be writing to it until it is stopped.
		return "", nil, plog, fmt.Errorf("%w (log: %s)", err, plog.Name())
	}
	return endpoint, exited, plog, nil
}

func run() error {
	porthole := flag.String("porthole", "bin/porthole", "the porthole binary to run")
	temporalAddr := flag.String("temporal-address", "127.0.0.1:7233", "where the dev server listens; a free port is taken if this one is busy")
	addr := flag.String("addr", "127.0.0.1:8082", "where porthole listens; a free port is taken if this one is busy")
	flag.Parse()

	bin, err := filepath.Abs(*porthole)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("no porthole binary at %s: run `make demo`, which builds it first", bin)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	state, err := os.MkdirTemp("", "porthole-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)

	step("starting the Temporal dev server (temporal server start-dev)")
	tlog, err := os.Create(filepath.Join(state, "temporal.log"))
	if err != nil {
		return err
	}
	defer tlog.Close()
	srv, err := temporaltest.Start(ctx, temporaltest.Options{HostPort: freeOr(*temporalAddr), Output: tlog})
	if err != nil {
		return err
	}
	defer func() { step("stopping the Temporal dev server"); srv.Stop() }()
	hostPort := srv.FrontendHostPort()
	step("Temporal is up at " + hostPort + ", namespace " + srv.Namespace)

	step("seeding sample workflows: completed, failed, running with a retrying activity and a child, and a schedule")
	fix, err := temporaltest.Seed(ctx, hostPort, srv.Namespace)
	if err != nil {
		return err
	}
	defer func() { step("stopping the sample worker"); fix.Stop() }()

	creds, err := demoCredentials(state)
	if err != nil {
		return err
	}
	endpoint, exited, plog, err := startPorthole(ctx, bin, state, freeOr(*addr), hostPort, srv.Namespace, creds)
	if plog != nil {
		defer plog.Close()
	}
	if err != nil {
		return err
	}
	step("porthole serve is up at " + endpoint)
	printHowToConnect(bin, endpoint, creds.token, hostPort, srv.Namespace, plog.Name(), creds.auditLog, creds.auditKey)

	return waitForStop(ctx, exited, plog.Name())
}

// waitForStop waits for Ctrl-C, then for porthole to stop; porthole
// stopping first is an error, naming its log.
func waitForStop(ctx context.Context, exited chan error, logName string) error {
	select {
	case <-ctx.Done():
		fmt.Println()
		step("Ctrl-C: stopping porthole")
		<-exited
		return nil
	case err := <-exited:
		return fmt.Errorf("porthole exited: %v (log: %s)", err, logName)
	}
}

func step(s string) { fmt.Println("==>", s) }

// freeOr returns addr if nothing listens there, else a free loopback port.
func freeOr(addr string) string {
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		return addr
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return addr
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitForEndpoint reads porthole's JSON log until it says where it serves.
func waitForEndpoint(r io.Reader, exited <-chan error) (string, error) {
	found := make(chan string, 1)
	go func() {
		dec := json.NewDecoder(r)
		for {
			var line map[string]any
			if err := dec.Decode(&line); err != nil {
				return
			}
			if line["msg"] == "serving MCP" {
				found <- fmt.Sprint(line["endpoint"])
				_, _ = io.Copy(io.Discard, r)
				return
			}
		}
	}()
	select {
	case e := <-found:
		return e, nil
	case err := <-exited:
		return "", fmt.Errorf("porthole exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		return "", errors.New("porthole did not start serving within 30s")
	}
}

func printHowToConnect(bin, endpoint, token, hostPort, namespace, logPath, auditLog, auditKey string) {
	mcpJSON, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{
		"porthole": map[string]any{
			"command": bin,
			"args":    []string{"stdio"},
			"env":     map[string]string{"TEMPORAL_ADDRESS": hostPort, "TEMPORAL_NAMESPACE": namespace},
		},
	}}, "", "  ")
	fmt.Printf(`
porthole is serving a read-only view of Temporal namespace %q.

Token for principal "demo" (shown once; porthole keeps only its digest):
  %s

Ask over HTTP with curl:
  curl -s %s \
    -H 'Authorization: Bearer %s' \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"%s"}}}'

Ask with the MCP Inspector (CLI mode):
  npx -y @modelcontextprotocol/inspector@2.12.0 --cli %s --transport http \
    --header 'Authorization: Bearer %s' --method tools/list

Claude Code over stdio: put this in .mcp.json (valid while this demo runs):
%s

See who asked what, and check that the audit log is untouched:
  %s audit report --key-file %s %s
  %s audit verify --key-file %s %s

Operations log: %s
Press Ctrl-C to stop porthole, the sample worker and the Temporal dev server.
`, namespace, token, endpoint, token, temporaltest.RunningWorkflowID, endpoint, token, indent(string(mcpJSON)),
		bin, auditKey, auditLog, bin, auditKey, auditLog, logPath)
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }
