package temporaltest

import (
	"context"
	"sync"
	"testing"
)

// Shared is the seeded dev server a test package's tests share. The first
// test that asks for it starts it; [Main] stops it after the last test. A
// package whose tests mostly need no Temporal thus waits for none, and under
// -short, where every test that asks is skipped, none is started.
type Shared struct {
	once sync.Once
	srv  *DevServer
	stop func()
	err  error
}

// Server returns the shared seeded server, starting it on the first call.
// Under -short it skips t. Without -short a server that cannot start fails
// t, and every later caller, with the reason (the command that installs the
// CLI, when it is missing).
func (s *Shared) Server(t testing.TB) *DevServer {
	t.Helper()
	Needs(t, "a Temporal dev server")
	s.once.Do(func() {
		s.srv, s.stop, s.err = StartSeeded(context.Background(), Options{})
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.srv
}

// Main runs a package's tests and then stops its shared server if a test
// started it; a TestMain passes its result to os.Exit.
func Main(m *testing.M, s *Shared) int {
	defer func() {
		if s.stop != nil {
			s.stop()
		}
	}()
	return m.Run()
}
