package temporal

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// devServer is the real Temporal dev server every integration test here
// talks to, seeded once.
var devServer *temporaltest.DevServer

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	srv, stop, err := temporaltest.StartSeeded(ctx, temporaltest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	devServer = srv
	return m.Run()
}

func dialTest(t *testing.T) *Adapter {
	t.Helper()
	a, err := Dial(context.Background(), Config{Address: devServer.FrontendHostPort(), Namespace: devServer.Namespace}, nil)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(a.Close)
	return a
}
