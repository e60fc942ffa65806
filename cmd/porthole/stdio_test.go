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

// TestAnUnknownPersonalDataDetectorIsRefused: PORTHOLE_REDACT_PERSONAL
// naming a detector porthole does not have stops it at start, with the
// names there are, rather than redacting less than the operator asked.
func TestAnUnknownPersonalDataDetectorIsRefused(t *testing.T) {
	t.Parallel()
	cmd := execPorthole(t, baseEnv("PORTHOLE_REDACT_PERSONAL=email,ssn"), "stdio")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), `"ssn"`) || !strings.Contains(stderr.String(), "email, iban, card, phone") {
		t.Errorf("PORTHOLE_REDACT_PERSONAL=email,ssn: %v, stderr %q", err, stderr.String())
	}
}
