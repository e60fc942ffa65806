package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startServer starts a server and has close stop it.
func (r *rig) startServer(ctx context.Context, bin string, args, env []string, ready string) (*server, error) {
	s, err := startServer(ctx, bin, args, env, ready)
	if err != nil {
		return nil, err
	}
	r.onClose(s.stop)
	return s, nil
}

// server is a subprocess serving MCP, with a way to read its costs.
type server struct {
	cmd      *exec.Cmd
	endpoint string
	admin    string // porthole's admin address, or the bare server's stats URL
}

type stats struct {
	cpu             time.Duration
	alloc           float64
	rssMiB, heapMiB float64
	reads           float64
}

func startServer(ctx context.Context, bin string, args, env []string, ready string) (*server, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd}
	lines := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var l map[string]any
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				select {
				case lines <- l:
				default:
				}
			}
		}
	}()
	timeout := time.After(30 * time.Second)
	for s.endpoint == "" || s.admin == "" {
		select {
		case l := <-lines:
			switch l["msg"] {
			case ready:
				s.endpoint = fmt.Sprint(l["endpoint"])
				if a, ok := l["stats"]; ok {
					s.admin = fmt.Sprint(a)
				}
			case "serving admin":
				s.admin = "http://" + fmt.Sprint(l["addr"]) + "/metrics"
			}
		case <-timeout:
			cmd.Process.Kill()
			return nil, fmt.Errorf("%s %v did not start", bin, args)
		}
	}
	return s, nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

// ownEnviron is this process's environment without porthole's and
// Temporal's settings: the servers measured get only what the bench sets.
func ownEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PORTHOLE_") && !strings.HasPrefix(kv, "TEMPORAL_") {
			env = append(env, kv)
		}
	}
	return env
}

// profile writes a CPU profile of the server process over d to path.
func (s *server) profile(path string, d time.Duration) error {
	url := strings.TrimSuffix(s.admin, "/metrics") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(1, int(d.Seconds())))
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profiling %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// stats reads the process's CPU time and RSS from /proc, and its allocations,
// heap and Temporal reads from its metrics.
func (s *server) stats() stats {
	var st stats
	pid := s.cmd.Process.Pid
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		ut, _ := strconv.ParseFloat(f[11], 64)
		stt, _ := strconv.ParseFloat(f[12], 64)
		st.cpu = time.Duration((ut + stt) / 100 * float64(time.Second)) // USER_HZ is 100 on Linux
	}
	st.rssMiB = procStatusKiB(pid, "VmRSS") / 1024
	resp, err := http.Get(s.admin)
	if err != nil {
		return st
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		val := func() float64 {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			return v
		}
		switch {
		case strings.HasPrefix(line, "go_memstats_alloc_bytes_total "):
			st.alloc = val()
		case strings.HasPrefix(line, "go_memstats_heap_inuse_bytes "):
			st.heapMiB = val() / (1 << 20)
		case strings.HasPrefix(line, "porthole_temporal_read_duration_seconds_count"):
			st.reads += val()
		}
	}
	return st
}

// procStatusKiB is the field (VmRSS, VmHWM) of the process pid's
// /proc/pid/status, in KiB, or 0 when it cannot be read.
func procStatusKiB(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == field+":" {
			kib, _ := strconv.ParseFloat(f[1], 64)
			return kib
		}
	}
	return 0
}
