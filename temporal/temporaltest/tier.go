package temporaltest

import "testing"

// Needs skips t under -short, the fast tier, naming the component the test
// needs. Without -short it returns, and the test must then fail with the
// install command if the component is missing.
func Needs(t testing.TB, component string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s, which -short (make unit) leaves out; make test runs it", component)
	}
}
