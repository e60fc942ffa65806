package temporal

import (
	"context"
	"os"
	"testing"

	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// devServer is the real Temporal dev server the integration tests here talk
// to, seeded once, started by the first test that needs it.
var devServer temporaltest.Shared

func TestMain(m *testing.M) {
	os.Exit(temporaltest.Main(m, &devServer))
}

func dialTest(t *testing.T) *Adapter {
	t.Helper()
	srv := devServer.Server(t)
	a, err := Dial(context.Background(), Config{Address: srv.FrontendHostPort(), Namespace: srv.Namespace}, nil)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(a.Close)
	return a
}
