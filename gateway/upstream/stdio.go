package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport runs a child and speaks newline-delimited JSON with it
// over its stdin and stdout, as the go-sdk's CommandTransport does, but
// reads the child's stdout through a frameReader: CommandTransport buffers
// a line of up to 16 MiB whatever porthole's bound, and holds no budget.
type stdioTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration // how long Close waits after closing stdin, and again after SIGTERM
	bound     func(io.Reader) *frameReader
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	r := t.bound(stdout)
	tr := &mcp.IOTransport{
		// The session is closed by closing the child's stdin, not its
		// stdout: the reader's Close gives back what it held and leaves
		// stdout open.
		Reader:        r,
		Writer:        &childStdin{cmd: t.cmd, stdin: stdin, terminate: t.terminate},
		MaxLineLength: int(r.limit) + frameSlack,
	}
	return tr.Connect(ctx)
}

// childStdin is the child's stdin. Closing it ends the child as the MCP
// stdio transport says a client should: close its input, wait, SIGTERM,
// wait, SIGKILL.
type childStdin struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	terminate time.Duration
}

func (c *childStdin) Write(p []byte) (int, error) { return c.stdin.Write(p) }

func (c *childStdin) Close() error {
	if err := c.stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-exited:
			return err, true
		case <-time.After(c.terminate):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if c.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := c.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("the child did not exit after SIGKILL")
}
