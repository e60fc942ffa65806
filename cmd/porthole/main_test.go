package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/porthole-dev/porthole/gateway/upstream/hostiletest"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// e2e holds what the end-to-end tests share, each made by the first test
// that needs it: a real Temporal dev server, seeded once, and the porthole
// binary built from this package. A run of tests that need neither (the
// flag and roster tests alone, or -short) starts no server and, if no test
// needs the binary, builds nothing.
var e2e struct {
	temporal temporaltest.Shared

	build    sync.Once
	buildDir string
	bin      string
	buildErr error
}

func TestMain(m *testing.M) {
	// The test binary doubles as a hostile stdio upstream when run as one.
	hostiletest.Main()
	code := temporaltest.Main(m, &e2e.temporal)
	if e2e.buildDir != "" {
		os.RemoveAll(e2e.buildDir)
	}
	os.Exit(code)
}

// portholeBin is the porthole binary built from this package, built on the
// first call. It needs only Go, so the fast tier runs the tests that use it.
func portholeBin(t testing.TB) string {
	t.Helper()
	e2e.build.Do(func() {
		if e2e.buildDir, e2e.buildErr = os.MkdirTemp("", "porthole-e2e-"); e2e.buildErr != nil {
			return
		}
		bin := filepath.Join(e2e.buildDir, "porthole")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			e2e.buildErr = fmt.Errorf("%w\n%s", err, out)
			return
		}
		e2e.bin = bin
	})
	if e2e.buildErr != nil {
		t.Fatalf("building porthole: %v", e2e.buildErr)
	}
	return e2e.bin
}

// devServer is the shared seeded dev server; under -short it skips t.
func devServer(t testing.TB) *temporaltest.DevServer {
	t.Helper()
	return e2e.temporal.Server(t)
}
