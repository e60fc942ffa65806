package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestStdioRefusesAnAuditLogOnStandardOutput: porthole stdio speaks MCP on
// stdout, so audit lines there would corrupt the client's stream; it used
// to write them there when told to.
func TestStdioRefusesAnAuditLogOnStandardOutput(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"stdout", "/dev/stdout", "/proc/self/fd/1"} {
		cmd := execPorthole(t, baseEnv("PORTHOLE_AUDIT_LOG="+path), "stdio")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "standard output") || stdout.Len() != 0 {
			t.Errorf("PORTHOLE_AUDIT_LOG=%s: %v, stdout %q, stderr %q", path, err, stdout.String(), stderr.String())
		}
	}
}
