package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// e2e holds what the end-to-end tests share: a real Temporal dev server,
// seeded once, and the porthole binary built from this package.
var e2e struct {
	temporal *temporaltest.DevServer
	bin      string
}

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "porthole-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	e2e.bin = filepath.Join(dir, "porthole")
	build := exec.Command("go", "build", "-o", e2e.bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building porthole:", err)
		return 1
	}

	ctx := context.Background()
	srv, stop, err := temporaltest.StartSeeded(ctx, temporaltest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	e2e.temporal = srv
	return m.Run()
}
