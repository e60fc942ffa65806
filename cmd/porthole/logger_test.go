package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/redact"
)

// TestCheckpointLinesAreLoggedAtAnyLevel: the operations log's checkpoint
// lines are the copy a pod cannot take back; at PORTHOLE_LOG_LEVEL=warn
// they were not written at all. (Not parallel: it swaps os.Stderr.)
func TestCheckpointLinesAreLoggedAtAnyLevel(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	red, _ := redact.New()
	log, evidence, _, err := newLogger("error", red)
	os.Stderr = stderr
	if err != nil {
		t.Fatal(err)
	}
	log.Info("chatter")
	evidence.Info("audit checkpoint", zap.String("checkpoint", "x"))
	w.Close()
	out, _ := io.ReadAll(r)
	if !strings.Contains(string(out), `"msg":"audit checkpoint"`) || strings.Contains(string(out), "chatter") {
		t.Fatalf("at level error the operations log holds:\n%s", out)
	}
}
