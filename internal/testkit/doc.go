// Package testkit is what the tests of several packages share and no program
// may use: the split of the suite into a fast tier and the whole, and waiting
// for a condition.
//
// # Two tiers
//
// `make unit` runs `go test -short`: every test that needs nothing beyond Go
// and this repository. A test that needs a real component (the Temporal dev
// server, the npm clients, helm) calls [Needs] first, which skips it under
// -short with the component's name. Without -short, as `make test` runs, the
// test goes on and fails, never skips, when the component is missing, with
// the command that installs it: a suite that skips what it cannot find
// passes on a machine that checked nothing.
//
// # Waiting
//
// [Poll] and [Eventually] are the one loop that waits for a condition. They
// try often at first and less often later, so that a quick condition is seen
// quickly and a slow one, such as a visibility query the dev server
// throttles, is not hammered while it settles.
//
// # Trust model
//
// It trusts its callers, which are tests. It skips and fails tests, so it
// must never be in the porthole binary's dependency graph;
// TestBinaryCannotWriteWorkflows in cmd/porthole proves it is not.
package testkit
