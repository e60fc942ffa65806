// Package redistest runs a real Redis (redis-server from Debian's
// packages, which `make redis-server` installs when missing) on a free
// loopback port for tests and the bench, with nothing saved to disk. It is
// not part of the porthole binary (cmd/porthole's dependency test).
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BinEnv names a redis-server to run instead of the one on PATH.
const BinEnv = "PORTHOLE_REDIS_SERVER"

// Install is the command that installs redis-server.
const Install = "make redis-server (apt-get install -y redis-server, as root)"

// Server is a running redis-server.
type Server struct {
	Addr     string // 127.0.0.1:port
	Password string // empty unless asked for
	bin, dir string
	cmd      *exec.Cmd
	done     chan struct{}
}

// Options for Launch.
type Options struct {
	// Password, when set, is required of clients (requirepass).
	Password string
}

// Start runs redis-server for the test and stops it at the end. It skips
// under -short (make unit) and fails with the install command when
// redis-server is missing.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("needs redis-server, which -short (make unit) leaves out; make test runs it")
	}
	s, err := Launch(o, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Launch is Start outside a test: redis-server on a free loopback port,
// its files in dir.
func Launch(o Options, dir string) (*Server, error) {
	bin := os.Getenv(BinEnv)
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			return nil, fmt.Errorf("redis-server is not installed: run %s", Install)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &Server{Addr: addr, Password: o.Password, bin: bin, dir: dir}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// URL is the redis:// URL of the server, with its password.
func (s *Server) URL() string {
	if s.Password != "" {
		return "redis://:" + s.Password + "@" + s.Addr
	}
	return "redis://" + s.Addr
}

func (s *Server) start() error {
	_, port, _ := net.SplitHostPort(s.Addr)
	args := []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log"), "--daemonize", "no"}
	if s.Password != "" {
		args = append(args, "--requirepass", s.Password)
	}
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting redis-server: %w", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(s.cmd, s.done)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server exited at start:\n%s", log)
		default:
		}
		if s.ping() == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return errors.New("redis-server did not answer PING within 10 s")
}

// ping sends PING (after AUTH when a password is set) and reads PONG.
func (s *Server) ping() error {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	cmd := "PING\r\n"
	if s.Password != "" {
		cmd = "AUTH " + s.Password + "\r\n" + cmd
	}
	if _, err := c.Write([]byte(cmd)); err != nil {
		return err
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.HasPrefix(line, "+PONG") {
			return nil
		}
		if strings.HasPrefix(line, "-") {
			return errors.New(strings.TrimSpace(line))
		}
	}
}

// Stop kills the server (as an outage would) and waits for it to go.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// Restart starts the server again on the same port, empty.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// Freeze stops the server answering without closing its port (SIGSTOP),
// as a hung Redis does; Thaw lets it go on.
func (s *Server) Freeze() { _ = syscall.Kill(s.cmd.Process.Pid, syscall.SIGSTOP) }

// Thaw is Freeze undone.
func (s *Server) Thaw() { _ = syscall.Kill(s.cmd.Process.Pid, syscall.SIGCONT) }
